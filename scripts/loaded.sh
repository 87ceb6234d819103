#!/usr/bin/env bash
# Runs a pytest selection N times with CPU-bound processes beside it, and says how
# many runs passed and which tests failed how often: the check that a test which
# counts signals, handler runs, scheduler waits or time does not depend on the
# scheduler (a two-core machine with two busy processes beside the test).
#
#   scripts/loaded.sh [-n RUNS] [-b BUSY] [--] PYTEST_ARGS...
#
#   -n RUNS   runs of the selection (20); every run is made, failed or not
#   -b BUSY   `yes >/dev/null` processes running beside it, the whole time (2)
#
# Environment: PYTHON (/usr/bin/python3), NVS_TEST_BUILD (passed on to the tests),
# LOADED_LOG (a directory for each run's pytest output; a temporary one by default,
# kept where runs failed).
#
#   scripts/loaded.sh -n 20 test/test_signals.py
#   NVS_TEST_BUILD=build-b scripts/loaded.sh -n 3 test/test_capture.py test/test_clock.py
#
# Prints one line per run (its pytest summary) and at the end
#   loaded: P of N runs passed (BUSY busy processes beside them; selection: ...)
# and, for each test that failed, how many of the N runs it failed in, and each skip
# with its reason (nsys's own failures skip a test, test/nsys.py: never a pass). Exit
# status 0 when every run passed, 1 otherwise, 2 for a usage error.
set -u

runs=20
busy=2
while [ $# -gt 0 ]; do
    case "$1" in
        -n) runs="$2"; shift 2 ;;
        -b) busy="$2"; shift 2 ;;
        --) shift; break ;;
        -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) break ;;
    esac
done
if [ $# -eq 0 ] || ! [ "$runs" -ge 1 ] 2>/dev/null || ! [ "$busy" -ge 0 ] 2>/dev/null; then
    echo "usage: scripts/loaded.sh [-n RUNS] [-b BUSY] [--] PYTEST_ARGS..." >&2
    exit 2
fi

python=${PYTHON:-/usr/bin/python3}
root=$(cd "$(dirname "$0")/.." && pwd)
log=${LOADED_LOG:-$(mktemp -d "${TMPDIR:-/tmp}/loaded.XXXXXX")}
mkdir -p "$log"

# The busy processes: started here, ended here, each by its own pid.
pids=()
stop_busy() {
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null
    done
    for pid in "${pids[@]}"; do
        wait "$pid" 2>/dev/null
    done
    pids=()
}
trap 'stop_busy; exit 130' INT TERM
trap 'stop_busy' EXIT
for ((i = 0; i < busy; i++)); do
    yes >/dev/null &
    pids+=("$!")
done

cd "$root" || exit 2
passed=0
for ((run = 1; run <= runs; run++)); do
    out="$log/run-$run.txt"
    "$python" -m pytest -q -p no:cacheprovider -rfEs "$@" >"$out" 2>&1
    status=$?
    summary=$(grep -E '^[=]* ?[0-9]+ (passed|failed|error|skipped|deselected)' "$out" | tail -1 | tr -d '=')
    [ -n "$summary" ] || summary="(no summary; pytest exit status $status)"
    if [ "$status" -eq 0 ]; then
        passed=$((passed + 1))
        printf 'run %d/%d: ok    %s\n' "$run" "$runs" "$summary"
    else
        printf 'run %d/%d: FAIL  %s\n' "$run" "$runs" "$summary"
    fi
done
stop_busy

echo "loaded: $passed of $runs runs passed ($busy busy processes beside them; selection: $*)"
# Each failed test, with the number of runs it failed in (pytest -rfE's short summary).
cat "$log"/run-*.txt | grep -E '^(FAILED|ERROR) ' | sed -E 's/ - .*//' | sort | uniq -c | sort -rn |
    sed 's/^/  /'
# Each skip and its reason, with the number of runs it was seen in.
cat "$log"/run-*.txt | grep -E '^SKIPPED ' | sed -E 's/^SKIPPED \[[0-9]+\] /skipped: /' | sort | uniq -c |
    sort -rn | sed 's/^/  /'
if [ "$passed" -eq "$runs" ]; then
    [ -n "${LOADED_LOG:-}" ] || rm -rf "$log"
    exit 0
fi
echo "loaded: each run's output is in $log"
exit 1
