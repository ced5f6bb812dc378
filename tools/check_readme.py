#!/usr/bin/env python3
"""Fails when the README's example differs from examples/readme_example.cpp (which the tests
compile and run), so the README's code is always code that builds."""
import os
import re
import sys

root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
readme = open(os.path.join(root, "README.md"), encoding="utf-8").read()
status = 0
for m in re.finditer(r"<!-- snippet: (\S+)[^>]*-->\s*```cpp\n(.*?)```", readme, re.S):
    path, code = m.group(1), m.group(2)
    actual = open(os.path.join(root, path), encoding="utf-8").read()
    if code != actual:
        print(f"README.md: the snippet of {path} differs from the file; copy the file into the README", file=sys.stderr)
        status = 1
    else:
        print(f"README snippet {path}: in sync")
if not re.search(r"<!-- snippet:", readme):
    print("README.md: no snippet markers found", file=sys.stderr)
    status = 1
sys.exit(status)
