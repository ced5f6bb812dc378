#!/usr/bin/env bash
# Builds bench_kernels in build/bench, runs it, times ONNX Runtime and PyTorch on the same
# sizes, and renders the table and charts into bench/results/:
#   bench_kernels.json   sweep (4K..16M elements) and variant matrix, Google Benchmark JSON
#   ort.json torch.json  the peers, same JSON shape
#   results.md sweep.svg variants.svg   (tools/bench/render.py)
#   and per-channel rows of 49 and 196 values (7x7, 14x14 maps), and per channel with 10 and
#   256 channels innermost ([batch, C]), against per-tensor
# With --observers, bench_observers and PyTorch's observers instead (1M and 16M-element
# batches): bench_observers.json torch_observers.json observers.md.
# With --inference, bench_inference (demo CNN, 3-layer MLP 1024 wide, int8 GEMM; batch 256)
# and ONNX Runtime on the same model files: bench_inference.json ort_inference.json inference.md;
# with --batch=N as well, the whole models alone at batch N (N = 1: latency):
# bench_inference_batchN.json ort_inference_batchN.json inference_batchN.md.
#
# usage: tools/bench/run_all.sh [--quick] [--no-peers] [--observers | --inference [--batch=N]]
#   --quick      3 sizes, short runs: checks the pipeline, not for publishing
#   --no-peers   skip ONNX Runtime and PyTorch
#   --observers  the observer benchmarks (bench/bench_observers.cpp) instead of the kernels'
#   --inference  whole-model inference (bench/bench_inference.cpp) instead of the kernels'
#   --batch=N    with --inference: the models at batch N, without the GEMM benches
# Environment: QK_BENCH_RESULTS (output folder, default bench/results),
#              QK_BENCH_BUILD (build folder, default build/bench).
# Medians of 3 repetitions; one thread everywhere. The machine may be shared: run it when
# it is quiet, and compare ratios from one run, never absolute numbers across runs.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${QK_BENCH_BUILD:-$root/build/bench}
results=${QK_BENCH_RESULTS:-$root/bench/results}
python=/usr/bin/python3

sizes="4096,16384,65536,262144,1048576,4194304,16777216"
matrix_sizes="65536,16777216"
sweep_min_time=0.25
matrix_min_time=0.1
peer_min_time=0.25
repetitions=3
peers=1
observers=0
inference=0
batch=
observer_sizes="1048576,16777216"
row_lengths="49 196"
channel_counts="10 256"
for arg in "$@"; do
  case "$arg" in
    --quick)
      sizes="4096,65536,16777216"; matrix_sizes="65536"; row_lengths="49"; channel_counts="256"
      sweep_min_time=0.05; matrix_min_time=0.02; peer_min_time=0.05 ;;
    --no-peers) peers=0 ;;
    --observers) observers=1 ;;
    --inference) inference=1 ;;
    --batch=*)
      batch=${arg#--batch=}
      [[ "$batch" =~ ^[1-9][0-9]*$ ]] || { echo "run_all.sh: --batch '$batch' is not a positive integer" >&2; exit 2; } ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "run_all.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done
if [ -n "$batch" ] && [ "$inference" = 0 ]; then
  echo "run_all.sh: --batch=$batch needs --inference (the kernels and observers have no batch)" >&2
  exit 2
fi

mkdir -p "$results" "$build"
step() { printf '\n== %s\n' "$*" >&2; }

if [ "$inference" = 1 ]; then
  step "configure and build bench_inference in $build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DQUANTKIT_BUILD_BENCH=ON -DQUANTKIT_BUILD_TESTS=OFF -DQUANTKIT_BUILD_EXAMPLES=OFF \
    -DQUANTKIT_BUILD_TOOLS=OFF >"$build/configure.log"
  cmake --build "$build" --target bench_inference
  models="$build/inference_models"
  suffix= batch_args=() ort_args=()
  if [ -n "$batch" ]; then
    suffix=_batch$batch
    batch_args=(--qk_batch="$batch" --benchmark_filter=inference/)
    ort_args=(--filter=inference/)
  fi
  step "bench_inference (models in $models${batch:+, batch $batch})"
  "$build/bench/bench_inference" --qk_models="$models" --benchmark_min_time=$sweep_min_time \
    --benchmark_repetitions=$repetitions --benchmark_report_aggregates_only=true "${batch_args[@]}" \
    --benchmark_out_format=json --benchmark_out="$results/bench_inference$suffix.json" >&2
  ort_json=()
  if [ "$peers" = 1 ] && command -v node >/dev/null && [ -d "$root/tools/ort/node_modules/onnxruntime-node" ]; then
    step "ONNX Runtime on the same files"
    node "$root/tools/bench/ort_inference.mjs" "$models/manifest.json" "$results/ort_inference$suffix.json" \
      --min_time=$sweep_min_time --repetitions=$repetitions "${ort_args[@]}"
    ort_json=("$results/ort_inference$suffix.json")
  fi
  $python "$root/tools/bench/render_inference.py" "$results/inference$suffix.md" "$results/bench_inference$suffix.json" "${ort_json[@]}"
  exit 0
fi

if [ "$observers" = 1 ]; then
  step "configure and build bench_observers in $build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DQUANTKIT_BUILD_BENCH=ON -DQUANTKIT_BUILD_TESTS=OFF -DQUANTKIT_BUILD_EXAMPLES=OFF \
    -DQUANTKIT_BUILD_TOOLS=OFF >"$build/configure.log"
  cmake --build "$build" --target bench_observers
  step "bench_observers ($observer_sizes)"
  "$build/bench/bench_observers" --qk_sizes="$observer_sizes" --benchmark_min_time=$sweep_min_time \
    --benchmark_repetitions=$repetitions --benchmark_report_aggregates_only=true \
    --benchmark_out_format=json --benchmark_out="$results/bench_observers.json" >&2
  torch_json=()
  if [ "$peers" = 1 ] && $python -c 'import torch' 2>/dev/null; then
    step "PyTorch observers"
    $python "$root/tools/bench/torch_observers.py" "$results/torch_observers.json" ${observer_sizes//,/ } \
      --min_time=$peer_min_time --repetitions=$repetitions
    torch_json=("$results/torch_observers.json")
  fi
  $python "$root/tools/bench/render_observers.py" "$results/observers.md" "$results/bench_observers.json" "${torch_json[@]}"
  exit 0
fi

step "configure and build bench_kernels in $build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DQUANTKIT_BUILD_BENCH=ON -DQUANTKIT_BUILD_TESTS=OFF -DQUANTKIT_BUILD_EXAMPLES=OFF \
  -DQUANTKIT_BUILD_TOOLS=OFF >"$build/configure.log"
cmake --build "$build" --target bench_kernels
bench="$build/bench/bench_kernels"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$root" status --porcelain -- include bench 2>/dev/null)" ]; then commit="$commit+local-changes"; fi
common=(--benchmark_repetitions=$repetitions --benchmark_report_aggregates_only=true
        --benchmark_out_format=json
        "--benchmark_context=quantkit_commit=$commit,compiler=$(c++ --version | head -1 | tr ',' ' ')")

step "bench_kernels: sweep ($sizes)"
"$bench" --qk_sizes="$sizes" --qk_no_matrix --benchmark_min_time=$sweep_min_time \
  "${common[@]}" --benchmark_out="$tmp/sweep.json" >"$tmp/sweep.txt"
step "bench_kernels: variant x granularity x target matrix ($matrix_sizes)"
"$bench" --qk_sizes= --qk_matrix_sizes="$matrix_sizes" --benchmark_min_time=$matrix_min_time \
  "${common[@]}" --benchmark_out="$tmp/matrix.json" >"$tmp/matrix.txt"
# The default variants, per channel and per tensor, dispatched: the runs over other layouts.
layout_filter='^(quantize/half_even|dequantize/linear|fake_quantize/half_even|requantize/(fixed_point|float)(\.bias)?|quantize_i16/half_even)/(per_tensor|per_channel)/simd/'
# Per-channel rows of NCHW feature maps (7x7, 14x14: rows shorter than or a few vectors long)
# against per-tensor on the same elements, 64 / 1024 / 16384 rows.
row_runs=()
for len in $row_lengths; do
  step "bench_kernels: per-channel rows of $len values"
  "$bench" --qk_channel_len="$len" --qk_sizes=$((len * 64)),$((len * 1024)),$((len * 16384)) --qk_no_matrix \
    --benchmark_filter="$layout_filter" \
    --benchmark_min_time=$sweep_min_time "${common[@]}" --benchmark_out="$tmp/rows$len.json" >"$tmp/rows$len.txt"
  row_runs+=("rows$len" "$tmp/rows$len.json")
done
# Per channel with the channels innermost ([batch, C]: GEMM outputs, NHWC), C = 10 (a
# classifier's outputs) and 256, batches of 16 to 65536, against per-tensor on the same elements.
for ch in $channel_counts; do
  step "bench_kernels: per channel, $ch channels last"
  "$bench" --qk_channels_last="$ch" --qk_sizes=$((ch * 16)),$((ch * 256)),$((ch * 4096)),$((ch * 65536)) --qk_no_matrix \
    --benchmark_filter="$layout_filter" \
    --benchmark_min_time=$sweep_min_time "${common[@]}" --benchmark_out="$tmp/last$ch.json" >"$tmp/last$ch.txt"
  row_runs+=("last$ch" "$tmp/last$ch.json")
done
# One file: the sweep's rows win where both measured the same name; the row runs' granularities
# become rows<L>:per_channel / rows<L>:per_tensor and last<C>:per_channel / last<C>:per_tensor
# (render.py's tables of them).
$python - "$tmp/sweep.json" "$tmp/matrix.json" "$tmp/bench_kernels.json" "${row_runs[@]}" <<'EOF'
import json, sys
sweep, matrix = (json.load(open(p)) for p in sys.argv[1:3])
seen = {b["name"] for b in sweep["benchmarks"]}
sweep["benchmarks"] += [b for b in matrix["benchmarks"] if b["name"] not in seen]
extra = sys.argv[4:]
for layout, path in zip(extra[::2], extra[1::2]):
    for b in json.load(open(path))["benchmarks"]:
        for key in ("name", "run_name"):
            if key in b:
                parts = b[key].split("/")
                parts[2] = f"{layout}:{parts[2]}"
                b[key] = "/".join(parts)
        sweep["benchmarks"].append(b)
json.dump(sweep, open(sys.argv[3], "w"), indent=1)
EOF
mv "$tmp/bench_kernels.json" "$results/bench_kernels.json"
peer_files=()
# The peers allocate their outputs on every call. Keep glibc from returning that memory to
# the kernel and faulting it in again on the next call (it made single ORT runs of 64K
# elements 9x slower in some phases of a process, and PyTorch at 16M elements 6x slower):
# this favours the peers and makes their numbers steady.
peer_env=(env MALLOC_TRIM_THRESHOLD_=1073741824 MALLOC_TOP_PAD_=67108864 MALLOC_MMAP_THRESHOLD_=33554432)
if [ "$peers" = 1 ]; then
  peer_sizes=${sizes//,/ }
  if command -v node >/dev/null && command -v npm >/dev/null; then
    if [ ! -d "$root/tools/bench/node_modules/onnxruntime-node" ]; then
      step "npm install --ignore-scripts onnxruntime-node (tools/bench/node_modules)"
      (cd "$root/tools/bench" && npm install --ignore-scripts --no-audit --no-fund)
    fi
    step "ONNX Runtime models (opset 13; 21 for blocked) and timing"
    # shellcheck disable=SC2086
    $python "$root/tools/bench/make_models.py" "$build/peers/models" $peer_sizes
    "${peer_env[@]}" node "$root/tools/bench/ort_bench.js" "$build/peers/models/manifest.json" "$tmp/ort.json" \
      --min_time=$peer_min_time --repetitions=$repetitions
    mv "$tmp/ort.json" "$results/ort.json"
    peer_files+=("$results/ort.json")
  else
    echo "run_all.sh: node/npm not found: ONNX Runtime not timed" >&2
  fi
  if $python -c 'import torch' 2>/dev/null; then
    step "PyTorch timing"
    # shellcheck disable=SC2086
    "${peer_env[@]}" $python "$root/tools/bench/torch_bench.py" "$tmp/torch.json" $peer_sizes \
      --min_time=$peer_min_time --repetitions=$repetitions
    mv "$tmp/torch.json" "$results/torch.json"
    peer_files+=("$results/torch.json")
  else
    echo "run_all.sh: python3-torch not found: PyTorch not timed" >&2
  fi
fi

step "render"
$python "$root/tools/bench/render.py" --out "$results" "$results/bench_kernels.json" "${peer_files[@]}"
echo "run_all.sh: results in $results (results.md, sweep.svg, variants.svg)" >&2
