# One short libFuzzer run: cmake -DHARNESS=... -DSCRATCH=... -DSECONDS=... -DSEEDS="dir;dir" -P run_smoke.cmake
# The scratch folder (new inputs) is emptied first, so every run starts from the seeds alone;
# -seed=1 makes the mutation sequence the same in every CI run.
file(REMOVE_RECURSE "${SCRATCH}")
file(MAKE_DIRECTORY "${SCRATCH}")
execute_process(
  COMMAND "${HARNESS}" -seed=1 -max_total_time=${SECONDS} -timeout=25 -rss_limit_mb=2048 -malloc_limit_mb=1024
          -print_final_stats=1 "-artifact_prefix=${SCRATCH}/" "${SCRATCH}" ${SEEDS}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(GLOB artifacts "${SCRATCH}/crash-*" "${SCRATCH}/leak-*" "${SCRATCH}/timeout-*" "${SCRATCH}/oom-*")
  message(FATAL_ERROR "${HARNESS}: exit ${rc}; reproducer(s): ${artifacts}")
endif()
