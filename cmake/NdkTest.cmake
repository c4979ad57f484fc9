# ndk_add_test(NAME <name> SOURCES <src...> [LIBS <lib...>] [TIMEOUT <s>] [ARGS <arg...>] [LABELS <l...>])
# One executable per test; ctest runs every test in its own process, killed at TIMEOUT.
# A test that cannot run here exits 77 after printing "SKIP: <reason>"; ctest reports it as skipped.
function(ndk_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBS;ARGS;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 60)
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ndk_testlib ${T_LIBS})
  add_test(NAME ${T_NAME} COMMAND ${T_NAME} ${T_ARGS})
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT} SKIP_RETURN_CODE 77
    ENVIRONMENT "NDK_PROVIDER_PATH=${NDK_PROVIDER_BUILD_DIR};NDK_TEST_SOURCE_DIR=${CMAKE_SOURCE_DIR};NDK_TEST_BINARY_DIR=${CMAKE_BINARY_DIR}")
  if(T_LABELS)
    set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}")
  endif()
endfunction()
