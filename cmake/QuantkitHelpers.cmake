# Build settings for quantkit's own (never installed as part of the package)
# targets: tests, examples, benchmarks, the CLI.
#
#   quantkit_target_defaults(<target> [NO_WERROR])
#
# adds the project warning flags (-Wall -Wextra -Wpedantic), -Werror when
# QUANTKIT_WERROR is ON (unless NO_WERROR), and -march=native when
# QUANTKIT_NATIVE is ON.
include_guard(GLOBAL)

function(quantkit_target_defaults target)
  cmake_parse_arguments(ARG "NO_WERROR" "" "" ${ARGN})
  if(MSVC)
    target_compile_options(${target} PRIVATE /W4 /permissive-)
    if(QUANTKIT_WERROR AND NOT ARG_NO_WERROR)
      target_compile_options(${target} PRIVATE /WX)
    endif()
  else()
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
    if(QUANTKIT_WERROR AND NOT ARG_NO_WERROR)
      target_compile_options(${target} PRIVATE -Werror)
    endif()
    if(QUANTKIT_NATIVE)
      # Highway 1.0.3 needs HWY_WANT_AVX3_DL when -march=native selects AVX-512.
      target_compile_options(${target} PRIVATE -march=native)
      target_compile_definitions(${target} PRIVATE HWY_WANT_AVX3_DL)
    endif()
  endif()
  set_target_properties(${target} PROPERTIES CXX_EXTENSIONS OFF)
endfunction()

# True (in <out_var>) when <name> denotes something that needs the ONNX
# protobuf bindings (its file name contains "onnx").
function(quantkit_needs_onnx name out_var)
  string(TOLOWER "${name}" lower)
  if(lower MATCHES "onnx")
    set(${out_var} TRUE PARENT_SCOPE)
  else()
    set(${out_var} FALSE PARENT_SCOPE)
  endif()
endfunction()

# Known imported targets of quantkit's dependencies (used before CMake 3.21,
# which lacks the IMPORTED_TARGETS directory property).
set(QUANTKIT_KNOWN_IMPORTED_TARGETS
  hwy::hwy hwy::hwy_contrib hwy::hwy_test
  protobuf::libprotobuf protobuf::libprotobuf-lite protobuf::libprotoc protobuf::protoc
  onnx onnx_proto onnxifi onnxifi_dummy onnxifi_loader onnxifi_wrapper)

# quantkit_snapshot_imported_targets(<var>): the known targets that exist now
# (call before find_package(); pass the result to the function below).
function(quantkit_snapshot_imported_targets out_var)
  set(existing "")
  foreach(target IN LISTS QUANTKIT_KNOWN_IMPORTED_TARGETS)
    if(TARGET ${target})
      list(APPEND existing ${target})
    endif()
  endforeach()
  set(${out_var} "${existing}" PARENT_SCOPE)
endfunction()

# quantkit_promote_imported_targets([<targets that existed before>...]):
# make the imported targets that find_package() created in the current
# directory global, so targets linking them can be used from other directories
# (quantkit added with add_subdirectory()).
function(quantkit_promote_imported_targets)
  if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.21)
    get_property(targets DIRECTORY PROPERTY IMPORTED_TARGETS)
  else()
    set(targets ${QUANTKIT_KNOWN_IMPORTED_TARGETS})
    if(ARGN)
      list(REMOVE_ITEM targets ${ARGN})
    endif()
  endif()
  foreach(target IN LISTS targets)
    if(TARGET ${target})
      get_target_property(imported ${target} IMPORTED)
      get_target_property(global ${target} IMPORTED_GLOBAL)
      if(imported AND NOT global)
        set_property(TARGET ${target} PROPERTY IMPORTED_GLOBAL TRUE)
      endif()
    endif()
  endforeach()
endfunction()
