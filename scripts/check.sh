#!/usr/bin/env bash
# make check's two halves at once, on their own builds: the suite against build/ and
# make test-asan (build/asan, built here first), each a pytest run of its own. On a
# 2-core machine they take about what the longer one takes alone; one after the other,
# their sum. Each half is also the other's load: every test that depends on the
# scheduler is written to pass beside a second make test (README, "Tests").
#
#   scripts/check.sh MAKE PYTHON PYTEST_ARGS...
#
# The ASan half's output goes to build/asan-half.log and is printed after the first
# half's; the exit status is 0 only when both passed.
set -u
make=$1 python=$2
shift 2
log=build/asan-half.log
mkdir -p build
"$make" --no-print-directory test-asan >"$log" 2>&1 &
asan=$!
# The ASan half stops with this one (an interrupted make test leaves no run behind).
trap 'kill -- "$asan" 2>/dev/null' INT TERM
"$python" -m pytest "$@"
first=$?
wait "$asan"
second=$?
echo
echo "---- make test-asan, run beside the suite above ($log) ----"
cat "$log"
if [ "$first" -ne 0 ] || [ "$second" -ne 0 ]; then
    echo "make check: the suite exited $first, make test-asan $second" >&2
    exit 1
fi
