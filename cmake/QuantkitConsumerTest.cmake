# ctest driver (cmake -P): configure, build and run a consumer project.
#   cmake -DSOURCE_DIR=<consumer src> -DBINARY_DIR=<scratch build dir>
#         [-DPREFIX_PATH=<install prefix>]      (find_package consumer)
#         [-DQUANTKIT_SOURCE_DIR=<quantkit src>] (add_subdirectory consumer)
#         [-DCMAKE_GENERATOR=..] [-DCMAKE_MAKE_PROGRAM=..] [-DCMAKE_CXX_COMPILER=..]
#         [-DBUILD_TYPE=..] -P QuantkitConsumerTest.cmake
foreach(var SOURCE_DIR BINARY_DIR)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "QuantkitConsumerTest.cmake: ${var} is not set")
  endif()
endforeach()
if(NOT DEFINED BUILD_TYPE OR "${BUILD_TYPE}" STREQUAL "")
  set(BUILD_TYPE Release)
endif()

set(configure_args -S "${SOURCE_DIR}" -B "${BINARY_DIR}" "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}")
if(DEFINED CMAKE_GENERATOR AND NOT "${CMAKE_GENERATOR}" STREQUAL "")
  list(APPEND configure_args -G "${CMAKE_GENERATOR}")
endif()
foreach(var CMAKE_MAKE_PROGRAM CMAKE_CXX_COMPILER QUANTKIT_SOURCE_DIR)
  if(DEFINED ${var} AND NOT "${${var}}" STREQUAL "")
    list(APPEND configure_args "-D${var}=${${var}}")
  endif()
endforeach()
if(DEFINED PREFIX_PATH AND NOT "${PREFIX_PATH}" STREQUAL "")
  # Only the fresh install prefix may provide quantkit.
  list(APPEND configure_args "-DCMAKE_PREFIX_PATH=${PREFIX_PATH}"
                             "-DQUANTKIT_EXPECTED_PREFIX=${PREFIX_PATH}")
endif()

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer ${what} failed (${rc}): ${ARGN}")
  endif()
endfunction()

file(REMOVE_RECURSE "${BINARY_DIR}")
run_step(configure "${CMAKE_COMMAND}" ${configure_args})
run_step(build "${CMAKE_COMMAND}" --build "${BINARY_DIR}" --config "${BUILD_TYPE}")

set(exe "${BINARY_DIR}/quantkit_consumer")
if(NOT EXISTS "${exe}" AND EXISTS "${BINARY_DIR}/${BUILD_TYPE}/quantkit_consumer")
  set(exe "${BINARY_DIR}/${BUILD_TYPE}/quantkit_consumer")
endif()
run_step(run "${exe}")
message(STATUS "consumer ${SOURCE_DIR}: configured, built and ran")
