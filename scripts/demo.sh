#!/usr/bin/env bash
# quantkit's demo: builds the `quantkit` command-line tool (only that target) in build/demo and
# runs it on the small CNN in examples/data/demo/: quantize to W8A8 and W4A8, test accuracy of
# float vs quantized in fake-quant and integer-only mode, the layer-wise similarity table and the
# accuracy-debug report (quantkit debug runall: out/debug/report.html).
#   scripts/demo.sh
# Environment: JOBS (default 2), CXX (compiler), QUANTKIT_DEMO_BUILD_DIR (default build/demo);
# the models and outputs it writes go to QUANTKIT_DEMO_OUT (default <build dir>/out).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)
build_dir=${QUANTKIT_DEMO_BUILD_DIR:-build/demo}
out=${QUANTKIT_DEMO_OUT:-$build_dir/out}
jobs=${JOBS:-2}
data=examples/data/demo

generator=()
if command -v ninja > /dev/null 2>&1; then generator=(-G Ninja); fi
if [[ ! -f $build_dir/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DQUANTKIT_BUILD_TESTS=OFF -DQUANTKIT_BUILD_EXAMPLES=OFF -DQUANTKIT_BUILD_BENCH=OFF \
    -DQUANTKIT_BUILD_TOOLS=ON -DQUANTKIT_INSTALL=OFF -DQUANTKIT_CLI_UNITY_BUILD=ON
fi
if ! cmake --build "$build_dir" --target help 2> /dev/null | grep -q quantkit_cli; then
  echo "demo.sh: the quantkit tool is not configured in $build_dir (it needs libonnx-dev, libprotobuf-dev," \
       "libcli11-dev, libfmt-dev, nlohmann-json3-dev and libeigen3-dev: run sudo scripts/install_deps.sh," \
       "then remove $build_dir)" >&2
  exit 1
fi
echo "demo.sh: building the quantkit tool ($jobs jobs; a few minutes the first time)"
cmake --build "$build_dir" --parallel "$jobs" --target quantkit_cli

exe=$build_dir/tools/quantkit/quantkit
[[ $exe = /* ]] || exe=$root/$exe
mkdir -p "$out"

# Prints each command as a user would type it, then runs it.
quantkit() {
  echo
  echo "\$ quantkit $*"
  "$exe" "$@"
}

echo
echo "== The model: a small CNN trained on scikit-learn's digits (8x8 images, 10 classes) =="
quantkit info $data/digits_cnn.onnx

echo
echo "== Quantize: W8A8 (int8 per-channel weights, uint8 activations) and W4A8 (int4 weights) =="
quantkit quantize $data/digits_cnn.onnx -o "$out/digits_cnn.w8a8.onnx" --calib $data/digits_calib.npy
quantkit quantize $data/digits_cnn.onnx -o "$out/digits_cnn.w4a8.onnx" --calib $data/digits_calib.npy \
  --weight-bits 4 --observer mse

echo
echo "== Test accuracy (540 digits): float, fake-quant (the QDQ file in float), integer-only =="
test_set=(--input $data/digits_test_x.npy --labels $data/digits_test_y.npy)
quantkit eval $data/digits_cnn.onnx "${test_set[@]}"
quantkit eval "$out/digits_cnn.w8a8.onnx" "${test_set[@]}" --mode fake
quantkit eval "$out/digits_cnn.w8a8.onnx" "${test_set[@]}" --mode int
quantkit eval "$out/digits_cnn.w4a8.onnx" "${test_set[@]}" --mode fake
quantkit eval "$out/digits_cnn.w4a8.onnx" "${test_set[@]}" --mode int

echo
echo "== Layer by layer: where W8A8 loses precision =="
quantkit compare $data/digits_cnn.onnx "$out/digits_cnn.w8a8.onnx" --input $data/digits_test_x.npy

echo
echo "== Integer-only logits as .npy =="
quantkit run "$out/digits_cnn.w8a8.onnx" --input $data/digits_test_x.npy -o "$out/logits.int8.npy" --mode int

echo
echo "== Accuracy debugging: which nodes lose accuracy (report.html + report.json) =="
quantkit debug runall $data/digits_cnn.onnx --calib $data/digits_calib.npy -o "$out/debug"

echo
echo "demo.sh: the quantized models and logits are in $out:"
ls -l "$out"
echo "demo.sh: ONNX Runtime runs the QDQ models too: node tools/ort/run_model.mjs $out/digits_cnn.w8a8.onnx" \
     "--input input=$data/digits_test_x.npy --output-dir $out/ort"
