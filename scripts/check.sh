#!/usr/bin/env bash
# make check's two halves at once, on their own builds: the suite against build/ and
# make test-asan (build/asan, built here first), each a pytest run of its own. On a
# 2-core machine they take about what the longer one takes alone; one after the other,
# their sum. Each half is also the other's load: every test that depends on the
# scheduler is written to pass beside a second make test (README, "Tests").
#
#   scripts/check.sh MAKE PYTHON PYTEST_ARGS...
#
# The packaging tests (LATE below: the wheels built from scratch and again in a clean
# clone, the aarch64 build run under qemu; ASan runs none of them) are the suite's
# longest files and test no instrumented code, so they run in the ASan half's lane, after
# it, which otherwise ends minutes before the suite (2026-11-29, a quiet fresh clone: the
# suite 904 s, ASan 571 s; the packaging files about 130 s of the suite's).
#
# The ASan lane's output goes to build/asan-half.log and is printed after the first
# half's; the exit status is 0 only when every run passed.
set -u
make=$1 python=$2
shift 2
late="test/test_wheel.py test/test_aarch64.py"
log=build/asan-half.log
mkdir -p build
{
  "$make" --no-print-directory test-asan
  asan=$?
  echo
  echo "---- the packaging tests, after make test-asan in its lane ----"
  # shellcheck disable=SC2086
  "$python" -m pytest -q -rs --durations=5 -p no:cacheprovider $late
  packaging=$?
  echo "make test-asan exited $asan, the packaging tests $packaging"
  [ "$asan" -eq 0 ] && [ "$packaging" -eq 0 ]
} >"$log" 2>&1 &
lane=$!
# The second lane stops with this one (an interrupted make test leaves no run behind).
trap 'pkill -TERM -P "$lane" 2>/dev/null; kill -- "$lane" 2>/dev/null' INT TERM
ignore=()
for file in $late; do ignore+=(--ignore "$file"); done
"$python" -m pytest "$@" "${ignore[@]}"
first=$?
wait "$lane"
second=$?
echo
echo "---- make test-asan and the packaging tests, run beside the suite above ($log) ----"
cat "$log"
if [ "$first" -ne 0 ] || [ "$second" -ne 0 ]; then
    echo "make check: the suite exited $first, its second lane (ASan, packaging) $second" >&2
    exit 1
fi
