#!/usr/bin/env bash
# The library's own calls go to the real functions or the kernel, never to the
# wrappers it exports for the program: linked with -Bsymbolic, a call
# to write() from log.c would bind to devices/io.c's write and become a
# traced device write, and tie every file that logs to the wrappers.
#
# usage: own_calls.sh EXPORTS_MAP OBJECT...
# Fails, naming each object and symbol, when an object refers to (leaves
# undefined) a function the version script exports. wrappers.o is the one
# exception: it holds the wrappers' addresses, the table resolve.c hands out.
set -euo pipefail
map=$1
shift
exported=$(sed -n 's/^[[:space:]]*\([A-Za-z_][A-Za-z0-9_]*\);.*/\1/p' "$map" | sort -u)
if [ -z "$exported" ]; then
  echo "own_calls: no exported names in $map" >&2
  exit 2
fi
status=0
for object in "$@"; do
  case "$object" in */obj/wrappers.o) continue ;; esac
  calls=$(nm --undefined-only --format=posix "$object" | awk '{print $1}' | sort -u |
          comm -12 - <(printf '%s\n' "$exported"))
  if [ -n "$calls" ]; then
    echo "own_calls: $object calls the library's exported wrappers: $(echo $calls)" \
         "(use sys.h, NVS_REAL or nvs_dlsym)" >&2
    status=1
  fi
done
exit $status
