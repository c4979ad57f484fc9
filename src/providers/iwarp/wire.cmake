# The iWARP wire layer: CRC32c, MPA frames and FPDUs as pure, socket-free code.
# Included by src/providers/iwarp/CMakeLists.txt (and, when that has not happened, by
# tests/wire/CMakeLists.txt), so paths are relative to this file, not to the includer.
add_library(iwarp_wire STATIC
  ${CMAKE_CURRENT_LIST_DIR}/crc32c.c
  ${CMAKE_CURRENT_LIST_DIR}/mpa.c
  ${CMAKE_CURRENT_LIST_DIR}/fpdu.c)
target_include_directories(iwarp_wire PUBLIC ${CMAKE_CURRENT_LIST_DIR})
