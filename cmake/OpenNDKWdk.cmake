# openndk_add_driver(NAME SOURCES...): builds a Windows kernel driver written against the WDK
# headers as NAME.so, a module ndkdrv(1) loads (openndk-wdk(7)). Only the build file differs
# from the driver's Windows build: the sources compile unchanged.
#
# Inside the OpenNDK tree the driver links the kit target `ndkwdk`; installed, this file is
# included by OpenNDKWdkConfig.cmake (find_package(OpenNDKWdk)), which sets
# OPENNDK_WDK_INCLUDE_DIRS and OPENNDK_WDK_LIBRARY_DIR for the imported kit.
function(openndk_add_driver name)
  if(NOT ARGN)
    message(FATAL_ERROR "openndk_add_driver(${name}): no sources")
  endif()
  add_library(${name} MODULE ${ARGN})
  set_target_properties(${name} PROPERTIES PREFIX "" SUFFIX ".so" C_STANDARD 11 C_EXTENSIONS ON)
  if(TARGET ndkwdk)
    target_link_libraries(${name} PRIVATE ndkwdk)
  else()
    if(NOT TARGET OpenNDK::wdk)
      find_library(OPENNDK_WDK_LIB ndkwdk HINTS ${OPENNDK_WDK_LIBRARY_DIR} REQUIRED)
      find_library(OPENNDK_LIB ndk HINTS ${OPENNDK_WDK_LIBRARY_DIR} REQUIRED)
      add_library(OpenNDK::wdk SHARED IMPORTED GLOBAL)
      set_target_properties(OpenNDK::wdk PROPERTIES IMPORTED_LOCATION ${OPENNDK_WDK_LIB}
        INTERFACE_INCLUDE_DIRECTORIES "${OPENNDK_WDK_INCLUDE_DIRS}"
        INTERFACE_COMPILE_OPTIONS "-fshort-wchar;-Wno-multichar;-Wno-unknown-pragmas"
        INTERFACE_LINK_LIBRARIES ${OPENNDK_LIB})
    endif()
    target_link_libraries(${name} PRIVATE OpenNDK::wdk)
  endif()
endfunction()
