# ctest driver (cmake -P) for one compile-fail test:
#   cmake -DBUILD_DIR=<build tree> -DTARGET=<target> -DSOURCE=<file.cpp> [-DCONFIG=<cfg>]
#         -P QuantkitCompileFail.cmake
# Passes only if building TARGET fails AND the build output matches the regex
# on the "// expect: <regex>" line of SOURCE. On success the compiler output
# is echoed (so ctest's PASS_REGULAR_EXPRESSION sees it too). Failure messages
# never print the regex itself: it could match its own text.
foreach(var BUILD_DIR TARGET SOURCE)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "QuantkitCompileFail.cmake: ${var} is not set")
  endif()
endforeach()

file(STRINGS "${SOURCE}" expect_line LIMIT_COUNT 1 REGEX "^[ \t]*//[ \t]*expect:")
string(REGEX REPLACE "^[ \t]*//[ \t]*expect:[ \t]*" "" expect_regex "${expect_line}")
string(STRIP "${expect_regex}" expect_regex)
if(expect_regex STREQUAL "")
  message(FATAL_ERROR "${SOURCE}: no '// expect: <regex>' line")
endif()

set(config_args "")
if(DEFINED CONFIG AND NOT "${CONFIG}" STREQUAL "")
  set(config_args --config "${CONFIG}")
endif()
execute_process(
  COMMAND "${CMAKE_COMMAND}" --build "${BUILD_DIR}" --target "${TARGET}" ${config_args}
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE out)

if(rc EQUAL 0)
  message(FATAL_ERROR "COMPILE-FAIL TEST BROKEN: ${SOURCE} compiled, but it must fail (see its '// expect:' line)")
endif()
if(NOT out MATCHES "${expect_regex}")
  message(FATAL_ERROR
    "COMPILE-FAIL TEST BROKEN: ${SOURCE} failed to compile, but the diagnostics below do not match its '// expect:' regex:\n${out}")
endif()
string(REGEX MATCH "${expect_regex}" matched "${out}")
message("${out}")
message(STATUS "compile-fail ok: ${TARGET} failed as expected, matched: ${matched}")
