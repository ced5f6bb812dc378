#!/usr/bin/env bash
# quantkit's demo: builds only the example `quantize_digits`
# (examples/quantize_digits.cpp) in build/demo and runs it from examples/, where
# it finds examples/data/. Extra arguments are passed to the program.
#   scripts/demo.sh [args...]
# Environment: JOBS (default 2), CXX (compiler), QUANTKIT_DEMO_BUILD_DIR (default build/demo).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)
target=quantize_digits
build_dir=${QUANTKIT_DEMO_BUILD_DIR:-build/demo}
jobs=${JOBS:-2}

if [[ ! -f examples/$target.cpp ]]; then
  echo "demo.sh: examples/$target.cpp does not exist (yet)" >&2
  exit 1
fi

generator=()
if command -v ninja > /dev/null 2>&1; then generator=(-G Ninja); fi
if [[ ! -f $build_dir/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DQUANTKIT_BUILD_TESTS=OFF -DQUANTKIT_BUILD_EXAMPLES=ON -DQUANTKIT_BUILD_BENCH=OFF \
    -DQUANTKIT_BUILD_TOOLS=OFF -DQUANTKIT_INSTALL=OFF
else
  cmake "$build_dir" > /dev/null   # picks up new examples
fi
cmake --build "$build_dir" --parallel "$jobs" --target "$target"

exe=$root/$build_dir/examples/$target
[[ $build_dir = /* ]] && exe=$build_dir/examples/$target
cd "$root/examples"
echo "demo.sh: running $exe $* (in examples/)"
exec "$exe" "$@"
