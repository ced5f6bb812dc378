#!/usr/bin/python3
"""Writes examples/data/: a multinomial logistic-regression classifier trained on scikit-learn's
bundled digits set (8x8 images, 10 classes) and its held-out test set, as .npy files.

  digits_weight.npy  float32 [10, 64]   digits_bias.npy  float32 [10]
  digits_calib.npy   float32 [256, 64]  (training images, for activation calibration)
  digits_test_x.npy  float32 [540, 64]  digits_test_y.npy int64 [540]

Deterministic (fixed split and solver); run with Debian's /usr/bin/python3.
"""
import os
import sys

import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "examples", "data")
os.makedirs(out, exist_ok=True)
x, y = load_digits(return_X_y=True)
x = (x / 16.0).astype(np.float32)
x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.3, random_state=0, stratify=y)
clf = LogisticRegression(max_iter=5000, C=10.0, random_state=0).fit(x_train, y_train)
np.save(os.path.join(out, "digits_weight.npy"), clf.coef_.astype(np.float32))
np.save(os.path.join(out, "digits_bias.npy"), clf.intercept_.astype(np.float32))
np.save(os.path.join(out, "digits_calib.npy"), x_train[:256])
np.save(os.path.join(out, "digits_test_x.npy"), x_test)
np.save(os.path.join(out, "digits_test_y.npy"), y_test.astype(np.int64))
acc = (clf.predict(x_test) == y_test).mean()
print(f"float test accuracy {acc:.4f} on {len(y_test)} images; weight range [{clf.coef_.min():.3f}, {clf.coef_.max():.3f}]")
