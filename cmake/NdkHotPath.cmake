# ndk_hot_path(TARGET...): what every message runs through is compiled with -O3 and linked with
# link-time optimisation in the release builds (Release, RelWithDebInfo), so that the calls
# between its files (a key lookup, a CQ push, a header's encoding) cost what a call within one
# file does; docs/performance.md has the counts. NDK_HOT_PATH_ACTIVE says whether it applies:
# not in the sanitizer builds (NDK_SANITIZE), not with NDK_HOT_PATH=OFF. A toolchain without
# link-time optimisation gets -O3 only.
option(NDK_HOT_PATH "Compile the data path with -O3 and link-time optimisation in release builds" ON)

set(NDK_HOT_PATH_ACTIVE OFF)
set(NDK_HOT_PATH_IPO OFF)
if(NDK_HOT_PATH AND NOT NDK_SANITIZE AND CMAKE_BUILD_TYPE MATCHES "^(Release|RelWithDebInfo)$")
  set(NDK_HOT_PATH_ACTIVE ON)
  include(CheckIPOSupported)
  check_ipo_supported(RESULT NDK_HOT_PATH_IPO OUTPUT ndk_ipo_why LANGUAGES C)
  if(NOT NDK_HOT_PATH_IPO)
    message(STATUS "no link-time optimisation for the data path: ${ndk_ipo_why}")
  endif()
endif()

function(ndk_hot_path)
  if(NOT NDK_HOT_PATH_ACTIVE)
    return()
  endif()
  foreach(t ${ARGN})
    # -fno-plt: a call into libc (a mutex, a system call's wrapper, memcpy) goes through the GOT
    # directly instead of jumping through the PLT first: one instruction less for each.
    target_compile_options(${t} PRIVATE -O3 -fno-plt)
    if(NDK_HOT_PATH_IPO)
      set_property(TARGET ${t} PROPERTY INTERPROCEDURAL_OPTIMIZATION ON)
    endif()
  endforeach()
endfunction()
