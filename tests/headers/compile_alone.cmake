file(WRITE ${OUT} "#include <${HEADER}>\n#include <${HEADER}>\nint ndk_header_alone_marker;\n")
execute_process(COMMAND ${CC} -std=c11 -Wall -Wextra -Werror -pedantic ${DEFS} -I${INCLUDE} -c ${OUT} -o ${OUT}.o
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${HEADER} does not compile alone with ${CC} ${DEFS}:\n${out}${err}")
endif()
