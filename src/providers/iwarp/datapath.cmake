# The iwarp provider's data path (issue 4): work-request posting, the TX and RX engines, the
# STag checks and consumer-driven progress. Included by src/providers/iwarp/CMakeLists.txt
# after the ndk-iwarp target exists; paths are relative to this file so tests/datapath can
# reuse the list.
set(IWARP_DATAPATH_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/post.c
  ${CMAKE_CURRENT_LIST_DIR}/tx.c
  ${CMAKE_CURRENT_LIST_DIR}/rx.c
  ${CMAKE_CURRENT_LIST_DIR}/access.c
  ${CMAKE_CURRENT_LIST_DIR}/poll.c)
if(TARGET ndk-iwarp)
  target_sources(ndk-iwarp PRIVATE ${IWARP_DATAPATH_SOURCES})
  # tests/datapath enables its end-to-end tests (through the runtime) once this is set.
  set_property(GLOBAL PROPERTY IWARP_DATAPATH_INTEGRATED TRUE)
endif()
