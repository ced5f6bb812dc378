#!/usr/bin/env bash
# Calibration at scale: throughput of `quantkit quantize --calib-shards` on the demo model with
# 1 and 2 MPI ranks, and the peak memory of a streamed calibration over a .npy ten times larger
# than the address-space cap (ulimit -v) given to the process.
#
#   tools/bench/mpi_calibration.sh [QUANTKIT] [OUT_DIR]
#     QUANTKIT  the quantkit binary built with MPI (default build/gcc/tools/quantkit/quantkit)
#     OUT_DIR   scratch folder for the generated data (default build/bench-mpi; GBs, removed after)
# Environment: SAMPLES (default 131072) throughput data set; CAP_MB (default 64) the ulimit -v
#   cap of the memory run, whose data set is 10 x CAP_MB; MPIEXEC (default mpirun).
#
# Prints a table; samples/s is what quantkit reports (rank 0: reading + executor + reduction,
# the model load excluded), the wall time includes mpirun's start-up, CPU s is user + system
# time of every process (mpirun's included). Ranks scale with idle cores only: on a loaded
# machine compare the CPU seconds (the work) rather than the rates.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
qk=$(realpath "${1:-build/gcc/tools/quantkit/quantkit}")
out=${2:-build/bench-mpi}
samples=${SAMPLES:-131072}
cap_mb=${CAP_MB:-64}
mpiexec=${MPIEXEC:-mpirun}
py=/usr/bin/python3
model=examples/data/demo/digits_cnn.onnx
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$out"
trap 'rm -f "$out"/tp.npy "$out"/big.npy "$out"/*.onnx "$out"/*.log "$out"/*.time' EXIT

# Writes N samples of the demo input (the calibration set tiled, with a little noise so that no
# two blocks are equal), block by block: the writer's memory stays small too.
make_npy() {  # make_npy PATH N
  "$py" - "$1" "$2" <<'EOF'
import sys
import numpy as np
path, n = sys.argv[1], int(sys.argv[2])
base = np.load("examples/data/demo/digits_calib.npy").astype(np.float32)
hdr = {"descr": "<f4", "fortran_order": False, "shape": (n,) + base.shape[1:]}
rng = np.random.default_rng(0)
with open(path, "wb") as f:
    np.lib.format.write_array_header_1_0(f, hdr) if n * base[0].size * 4 < 2**31 else \
        np.lib.format.write_array_header_2_0(f, hdr)
    done = 0
    while done < n:
        k = min(n - done, 1 << 16)
        reps = -(-k // len(base))
        block = np.tile(base, (reps, 1, 1, 1))[:k]
        block = block + rng.normal(0, 0.01, block.shape).astype(np.float32)
        block.astype("<f4").tofile(f)
        done += k
EOF
}

rate_of() { sed -n 's/.*calibrated \([0-9]*\) samples on \([0-9]*\) .* in \([0-9.]*\) s (\([0-9]*\) samples\/s).*/\4/p' "$1"; }

echo "== throughput: $samples samples of the demo model (digits_cnn, input 1x8x8), --batch 256"
make_npy "$out/tp.npy" "$samples"
printf '%-22s %10s %8s %10s %6s\n' "run" "samples/s" "wall s" "CPU s" "CPU %"
for run in "1 process (no MPI)" "mpirun -n 1" "mpirun -n 2"; do
  case "$run" in
    1*) cmd=("$qk") ;;
    "mpirun -n 1") cmd=("$mpiexec" -n 1 --oversubscribe "$qk") ;;
    *) cmd=("$mpiexec" -n 2 --oversubscribe "$qk") ;;
  esac
  /usr/bin/time -o "$out/tp.time" -f '%e %U %S %P' \
    "${cmd[@]}" quantize "$model" -o "$out/tp.onnx" --calib-shards "$out/tp.npy" --batch 256 > /dev/null 2> "$out/tp.log"
  read -r wall user sys pct < "$out/tp.time"
  printf '%-22s %10s %8s %10s %6s\n' "$run" "$(rate_of "$out/tp.log")" "$wall" "$(echo "$user + $sys" | bc)" "$pct"
done
echo "(load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores: ranks only scale with idle cores)"

big_mb=$((cap_mb * 10))
big_samples=$((big_mb * 1024 * 1024 / 256))
echo
echo "== peak memory: a ${big_mb} MB .npy ($big_samples samples) under ulimit -v $((cap_mb * 1024)) KB (${cap_mb} MB)"
make_npy "$out/big.npy" "$big_samples"
ls -l "$out/big.npy" | awk '{printf "data file: %d bytes\n", $5}'
# The whole file at once does not fit: --calib loads it and must fail under the cap.
if (ulimit -v $((cap_mb * 1024)); "$qk" quantize "$model" -o "$out/big_mem.onnx" --calib "$out/big.npy" \
      > /dev/null 2> "$out/big_mem.log"); then
  echo "--calib (in memory) under the cap: succeeded (unexpected)"
else
  echo "--calib (in memory) under the cap: fails as expected: $(tail -1 "$out/big_mem.log" | cut -c1-120)"
fi
(ulimit -v $((cap_mb * 1024)); /usr/bin/time -v "$qk" quantize "$model" -o "$out/big.onnx" --calib-shards "$out/big.npy" \
   --batch 256 > /dev/null 2> "$out/big.log") || { echo "streamed run failed:"; tail -5 "$out/big.log"; exit 1; }
grep -o 'calibrated .*' "$out/big.log"
awk -F': ' '/Maximum resident set size/ {printf "peak RSS %.1f MB (cap %d MB of address space, data %d MB)\n", $2 / 1024, '"$cap_mb"', '"$big_mb"'}' "$out/big.log"
