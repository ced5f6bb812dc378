# One short libFuzzer run: cmake -DHARNESS=... -DSCRATCH=... -DSECONDS=... -DSEEDS="dir;dir" -P run_smoke.cmake
# The scratch folder (new inputs) is emptied first, so every run starts from the seeds alone.
# -seed=1 fixes the first mutations, but the run is not reproducible across machines: how many
# inputs fit in SECONDS, and the coverage features of the seeds, differ between hosts.
#
# libFuzzer's log is thousands of lines (one per new input); CI logs keep only their ends. So the
# log goes to a file beside the scratch folder, and what is printed is the final statistics on
# success, or the finding itself on failure: the sanitizer or libFuzzer report, the reproducer's
# path and its bytes in base64 (enough to rebuild it from a CI log alone).
file(REMOVE_RECURSE "${SCRATCH}")
file(MAKE_DIRECTORY "${SCRATCH}")
set(log "${SCRATCH}.log")
execute_process(
  COMMAND "${HARNESS}" -seed=1 -max_total_time=${SECONDS} -timeout=25 -rss_limit_mb=2048 -malloc_limit_mb=1024
          -print_final_stats=1 "-artifact_prefix=${SCRATCH}/" "${SCRATCH}" ${SEEDS}
  RESULT_VARIABLE rc
  OUTPUT_FILE "${log}" ERROR_FILE "${log}")
file(READ "${log}" out)
if(rc EQUAL 0)
  string(REGEX MATCH "Done [0-9]+ runs[^\n]*" done "${out}")
  string(REGEX MATCH "stat::[^\n]*(\n[^\n]*stat::[^\n]*)*" stats "${out}")
  message(STATUS "${HARNESS}: ${done}\n${stats}\n(full log: ${log})")
  return()
endif()
# The finding starts at the first report line; without one, the last 4000 characters.
string(REGEX MATCH "(==[0-9]+==ERROR|ERROR: libFuzzer|[^\n]*runtime error:|terminate called|[^\n]*deadly signal).*" finding "${out}")
if(finding STREQUAL "")
  string(LENGTH "${out}" n)
  if(n GREATER 4000)
    math(EXPR start "${n} - 4000")
    string(SUBSTRING "${out}" ${start} -1 finding)
  else()
    set(finding "${out}")
  endif()
endif()
file(GLOB artifacts "${SCRATCH}/crash-*" "${SCRATCH}/leak-*" "${SCRATCH}/timeout-*" "${SCRATCH}/oom-*")
message(FATAL_ERROR "${HARNESS}: exit ${rc}; reproducer(s): ${artifacts}\n"
                    "--- the finding (full log: ${log}) ---\n${finding}")
