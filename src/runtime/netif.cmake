# The runtime's network-interface module (rtnetlink snapshot and monitor); included by
# src/runtime/CMakeLists.txt and usable on its own by tools and tests.
include_guard(GLOBAL)
add_library(ndk_netif STATIC ${CMAKE_CURRENT_LIST_DIR}/netif.c)
target_include_directories(ndk_netif PUBLIC ${CMAKE_CURRENT_LIST_DIR})
