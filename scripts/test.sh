#!/usr/bin/env bash
# quantkit's test command (what CI runs after scripts/install_deps.sh).
#
#   scripts/test.sh                  all stages: gcc clang-asan meson
#   scripts/test.sh --quick          only the gcc stage
#   scripts/test.sh --only clang-asan  one stage (or a comma list: --only gcc,meson)
#
# Stages (build folders under build/, reused incrementally):
#   gcc         GCC 12, -O2 -DNDEBUG (Debian's own level: -O3 spends a third more of CI's build
#               time on the same tests; the meson stage runs the SIMD tests at -O3), -Werror;
#               the unit tests' own sources at -O1 (QUANTKIT_TEST_CXX_FLAGS: about half of their
#               -O2 compile time, which was half the stage's CPU; the SIMD implementation they
#               link, the tool and the examples stay at -O2); every ctest test (unit,
#               compile_fail, consumer, example, peer, accuracy)
#   clang-asan  Clang 14, -O0 -fsanitize=address,undefined -fno-sanitize-recover=all, -Werror;
#               unit, cli, example (but ptq_remedies_onnx) and compile_fail tests (the second
#               compiler and the sanitizers in one build: CI has 2 cores), and the fuzz harnesses
#               (fuzz/, -fsanitize=fuzzer too): 10 s of fuzzing each from their seeds (label fuzz);
#               not the peer tests (ONNX Runtime's runs of quantkit's files: what they add is the
#               comparison, and the calibration, export and fake-quant code they drive runs under
#               the sanitizers in the unit tests; at -O0 they took 4 of CI's minutes), nor
#               the accuracy sweeps (label accuracy: the demo CNN over every observer, CLE's and
#               bias correction's accuracy on the hostile model: 5.5 minutes at -O0; their
#               calibration, CLE and bias correction code runs in the other unit cases), nor
#               cli_remedies and cli_debug_mixed (AdaRound/CLE/bias correction, auto mixed
#               precision and the mix observer through the tool: 3.5 and 4 minutes at -O0; the
#               library code runs under the sanitizers in test_ptq_remedies_onnx and
#               test_analysis_debug, the tool's option handling in the other cli tests)
#   meson       the meson build (GCC, release: -O3, -Dwerror=true): the dispatch implementation as meson
#               builds it, for AVX3, AVX2 and the fallback (-Dtest_simd_targets=main: the -O3
#               build of all six targets was this stage's long pole, 491 s of CPU for the three
#               in one TU; in three parts since, 143 + 129 + 91 s in parallel: the stage 9.4 ->
#               6.2 min; the GCC stage tests every target at -O2), and the tests that exercise the build itself
#               (runtime dispatch with the library, the Quantizer, the ONNX dependency, two
#               examples, the test-list check); the rest repeats the GCC stage's compiles (17 of
#               CI's 2-core minutes; test_simd_static, static dispatch on the header-only
#               dependency, alone 300-460 s of -O3), so it runs only with QUANTKIT_MESON_ALL=1
# Both CMake stages build the tool as two unity sources (QUANTKIT_CLI_UNITY_BUILD) and 24 unit
# tests as four unity programs (QUANTKIT_TEST_UNITY_GROUPS; each test keeps its ctest test): their
# sources instantiated the same executor, calibration and ONNX code one by one.
# Environment: JOBS (default 2) parallel compile and test jobs;
#   QUANTKIT_BUILD_ROOT (default build) folder holding the stage build folders;
#   QUANTKIT_MESON_ALL=1 builds and runs every meson test.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)
jobs=${JOBS:-2}
build_root=${QUANTKIT_BUILD_ROOT:-build}
all_stages=(gcc clang-asan meson)
stages=("${all_stages[@]}")

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) stages=(gcc) ;;
    --only)
      [[ $# -ge 2 ]] || { echo "test.sh: --only needs a stage (${all_stages[*]})" >&2; exit 2; }
      IFS=',' read -r -a stages <<< "$2"; shift ;;
    --only=*) IFS=',' read -r -a stages <<< "${1#--only=}" ;;
    -h|--help) usage; exit 0 ;;
    *) echo "test.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
for s in "${stages[@]}"; do
  case " ${all_stages[*]} " in
    *" $s "*) ;;
    *) echo "test.sh: unknown stage '$s' (stages: ${all_stages[*]})" >&2; exit 2 ;;
  esac
done

export CTEST_OUTPUT_ON_FAILURE=1
export CLICOLOR=0

find_cxx() {  # first compiler found among the arguments
  local c
  for c in "$@"; do
    if command -v "$c" > /dev/null 2>&1; then command -v "$c"; return 0; fi
  done
  return 1
}

log() { printf '\n=== [%s] %s\n' "$stage" "$*"; }

# configure + build + ctest for one CMake stage:
#   cmake_stage <build dir> <ctest extra args (one string)> <cmake args...>
cmake_stage() {
  local dir=$1 ctest_args=$2; shift 2
  log "configure $dir"
  cmake -S "$root" -B "$dir" -G Ninja \
    -DQUANTKIT_BUILD_TESTS=ON -DQUANTKIT_BUILD_EXAMPLES=ON -DQUANTKIT_BUILD_BENCH=OFF \
    -DQUANTKIT_CLI_UNITY_BUILD=ON -DQUANTKIT_TEST_UNITY_GROUPS=ON "$@" || { failed_step=configure; return 1; }
  log "build ($jobs jobs)"
  # -k 0: report every compile error, not only the first.
  cmake --build "$dir" --parallel "$jobs" -- -k 0 || { failed_step=build; return 1; }
  log "ctest ($jobs jobs) $ctest_args"
  # shellcheck disable=SC2086
  (cd "$dir" && ctest --parallel "$jobs" --output-on-failure --no-tests=error $ctest_args) \
    || { failed_step=ctest; return 1; }
}

stage_gcc() {
  local cxx; cxx=$(find_cxx g++-12 g++) || { failed_step="g++ not found"; return 1; }
  cmake_stage "$build_root/gcc" "" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
    -DCMAKE_CXX_COMPILER="$cxx" -DQUANTKIT_WERROR=ON -DQUANTKIT_TEST_CXX_FLAGS=-O1
}

stage_clang-asan() {
  local cxx; cxx=$(find_cxx clang++-14 clang++) || { failed_step="clang++ not found"; return 1; }
  local san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  # Consumer tests only test the build system (and GCC's stage runs them): not repeated here,
  # and their programs are not built (QUANTKIT_BUILD_SINGLE_HEADER_TESTS=OFF). Peer tests: see
  # the header.
  # -O0 with line tables: Clang 14 with the sanitizers at -O1 spends minutes on one test TU
  # (test_calibration.cpp: 12 s of CPU at -O0, over 8 min at -O1), and CI has 2 cores.
  # The example ptq_remedies_onnx (its accuracy table: 500 AdaRound iterations per layer on two
  # models) takes over 13 min at -O0 with the sanitizers; test_ptq_remedies_onnx runs the same
  # code paths here, and GCC's stage runs the example.
  # The tests' SIMD implementation as a shared library (QUANTKIT_TEST_SIMD_SHARED): at -O0 with
  # ASan it is ~160 MB of code, which each of ~70 programs otherwise copies (346 s of links).
  cmake_stage "$build_root/clang-asan" "-LE consumer|peer|accuracy -E ^(ptq_remedies_onnx|cli_remedies|cli_debug_mixed)$" \
    -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_COMPILER="$cxx" -DQUANTKIT_WERROR=ON \
    -DCMAKE_CXX_FLAGS="-O0 -gline-tables-only $san" \
    -DCMAKE_EXE_LINKER_FLAGS="$san" -DCMAKE_SHARED_LINKER_FLAGS="$san" \
    -DQUANTKIT_INSTALL=OFF -DQUANTKIT_BUILD_FUZZ=ON -DQUANTKIT_BUILD_SINGLE_HEADER_TESTS=OFF \
    -DQUANTKIT_TEST_SIMD_SHARED=ON
}

stage_meson() {
  local dir=$build_root/meson
  command -v meson > /dev/null || { failed_step="meson not found"; return 1; }
  log "meson setup $dir"
  if [[ -f $dir/meson-private/coredata.dat ]]; then
    # --reconfigure picks up added or removed tests/test_*.cpp.
    meson setup --reconfigure "$dir" || { failed_step=setup; return 1; }
  else
    meson setup "$dir" --buildtype=release -Dwerror=true -Dtests=true -Dexamples=true -Dtest_simd_targets=main \
      || { failed_step=setup; return 1; }
  fi
  if [[ ${QUANTKIT_MESON_ALL:-0} == 1 ]]; then
    log "meson compile ($jobs jobs)"
    meson compile -C "$dir" -j "$jobs" || { failed_step=build; return 1; }
    log "meson test ($jobs jobs)"
    meson test -C "$dir" --num-processes "$jobs" --print-errorlogs || { failed_step=test; return 1; }
    return 0
  fi
  local tests=(test_simd_kernels test_quantizer test_onnx_load readme_example custom_tensor)
  log "meson compile ($jobs jobs): ${tests[*]}"
  meson compile -C "$dir" -j "$jobs" "${tests[@]}" || { failed_step=build; return 1; }
  log "meson test ($jobs jobs): ${tests[*]} test_list_is_current"
  meson test -C "$dir" --no-rebuild --num-processes "$jobs" --print-errorlogs \
    "${tests[@]}" test_list_is_current || { failed_step=test; return 1; }
}

declare -a summary=()
status=0
start_all=$SECONDS
for stage in "${stages[@]}"; do
  failed_step=""
  t0=$SECONDS
  if "stage_$stage"; then
    result="PASS"
  else
    result="FAIL (${failed_step:-error})"
    status=1
  fi
  dt=$((SECONDS - t0))
  summary+=("$(printf '%-6s %-22s %3dm%02ds' "$stage" "$result" $((dt / 60)) $((dt % 60)))")
  printf '\n=== [%s] %s in %dm%02ds\n' "$stage" "$result" $((dt / 60)) $((dt % 60))
done

total=$((SECONDS - start_all))
echo
echo "=== test.sh summary ==="
for line in "${summary[@]}"; do echo "  $line"; done
printf '  total %dm%02ds: %s\n' $((total / 60)) $((total % 60)) \
  "$([[ $status -eq 0 ]] && echo 'ALL PASSED' || echo 'FAILED')"
exit "$status"
