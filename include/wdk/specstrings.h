/* specstrings.h: the WDK name under which drivers include the annotations; see sal.h. */
#include "sal.h"
