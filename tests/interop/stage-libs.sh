#!/usr/bin/env bash
# stage-libs.sh - copies into DEST the shared libraries that FILEs (our tools, libndk, the provider
# modules) load and the interop guest image does not carry, for the guest's LD_LIBRARY_PATH
# (guest and host are the same Debian release, vm/build.sh). Left out: the C library's own
# files, which the image has, and rdma-core's libraries, which the image has from its own
# packages together with the verbs drivers they load.
# Usage: stage-libs.sh DEST FILE...
set -euo pipefail
dest=$1
shift
for lib in $(ldd "$@" 2>/dev/null | awk '/=> \//{print $3}' | sort -u); do
	case "$(basename "$lib")" in
	libc.so* | libm.so* | ld-linux* | libgcc_s.so* | libibverbs.so* | librdmacm.so* | libnl-*) ;;
	*) cp -L "$lib" "$dest/" ;;
	esac
done
