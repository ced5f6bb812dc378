# ctest fixture (cmake -P): install the quantkit build tree BUILD_DIR into a
# fresh PREFIX, for the find_package() consumer test.
#   cmake -DBUILD_DIR=<build> -DPREFIX=<dir> [-DCONFIG=<cfg>] -P QuantkitConsumerInstall.cmake
foreach(var BUILD_DIR PREFIX)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "QuantkitConsumerInstall.cmake: ${var} is not set")
  endif()
endforeach()

file(REMOVE_RECURSE "${PREFIX}")
set(config_args "")
if(DEFINED CONFIG AND NOT "${CONFIG}" STREQUAL "")
  set(config_args --config "${CONFIG}")
endif()
execute_process(
  COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}" ${config_args}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install ${BUILD_DIR} --prefix ${PREFIX} failed (${rc})")
endif()

file(GLOB_RECURSE config_file "${PREFIX}/*/quantkitConfig.cmake")
if(NOT config_file)
  message(FATAL_ERROR "quantkitConfig.cmake was not installed under ${PREFIX}")
endif()
message(STATUS "installed quantkit into ${PREFIX} (${config_file})")
