#!/usr/bin/env bash
# make soak: the example harness for a long run on the emulated camera, with the shim's trace
# recorder and its frames counted. It samples the harness's memory from /proc while it runs and
# says whether it stayed flat, then checks that the trace loads (json) and holds every frame.
#
#   SOAK_FRAMES=100000           frames to run
#   SOAK_OPTIONS="--async --threads"   the harness's mode (stream of queued transfers, capture thread)
#   SOAK_OUT=build/soak          where the trace and the samples go
#   SOAK_TRACE=trace.json        the trace file's name there: trace.pftrace records Perfetto's
#                                binary form (read back with scripts/pftrace.py)
#   SOAK_SAMPLE_S=1              seconds between samples of /proc/PID/status
#   SOAK_SETTLED_PERCENT=25      the flatness check starts from the sample at this part of the run
#                                (the shim registers up to 8192 distinct range names - control
#                                transfers carry wValue, the frame index - and holds them)
#   SOAK_RSS_SLACK_KB=4096       growth of VmRSS allowed from there to the end
#   SOAK_SHIM=0                  the same run without the shim: the harness's own memory, a baseline
#   BUILD=build PYTHON=/usr/bin/python3
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${BUILD:-build}" && pwd)
python=${PYTHON:-/usr/bin/python3}
frames=${SOAK_FRAMES:-100000}
options=${SOAK_OPTIONS:---async --threads}
out=${SOAK_OUT:-$build/soak}
trace_name=${SOAK_TRACE:-trace.json}
every=${SOAK_SAMPLE_S:-1}
settled=${SOAK_SETTLED_PERCENT:-25}
slack=${SOAK_RSS_SLACK_KB:-4096}
with_shim=${SOAK_SHIM:-1}
mkdir -p "$out"
out=$(cd "$out" && pwd)
trace=$out/$trace_name
rm -f "$trace" "$out/samples.txt" "$out/harness.out" "$out/harness.err"
# A copy of the library, so that a rebuild during the run cannot touch the one it uses.
shim=$out/libnvtxshim.so
cp "$build/libnvtxshim.so" "$shim"

# The harness on the emulated camera, the shim appended inside the device runner (after
# umockdev's preload library), the CUDA copies on the test stand-in driver.
export NVTXSHIM_TRACE=$trace NVTXSHIM_FRAME=call:libusb_control_transfer
export LD_LIBRARY_PATH=$build/test/stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
started=$(date +%s%N)
[ "$with_shim" = 1 ] || shim=
# shellcheck disable=SC2016,SC2086  # $LD_PRELOAD expands in the child; SOAK_OPTIONS is a list
"$build/emucam" -- sh -c 'LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}'"$shim"'" exec "$@"' sh \
  "$build/harness_physical" --frames "$frames" $options >"$out/harness.out" 2>"$out/harness.err" &
runner=$!
echo "== soak: $frames frames, harness_physical $options, trace $trace"

# The harness is emucam's child once sh has exec'd it.
harness=
while [ -z "$harness" ] && kill -0 "$runner" 2>/dev/null; do
  for child in $(pgrep -P "$runner"); do
    # comm holds the first 15 characters of the name
    if [ "$(cat /proc/"$child"/comm 2>/dev/null)" = harness_physica ]; then harness=$child; fi
  done
  [ -n "$harness" ] || sleep 0.05
done
[ -n "$harness" ] || { echo "soak: the harness did not start" >&2; cat "$out/harness.err" >&2; exit 1; }

# Seconds since the start, to a tenth.
elapsed() {
  local tenths=$((($(date +%s%N) - started) / 100000000))
  echo "$((tenths / 10)).$((tenths % 10))"
}

# One line per sample: seconds since the start, then the status fields (kB) and the trace's size.
sample() {
  local fields
  fields=$(awk '/^(VmRSS|VmHWM|RssAnon|RssFile|RssShmem):/ { printf "%s=%s ", $1, $2 }' \
           /proc/"$harness"/status 2>/dev/null) || return 1
  [ -n "$fields" ] || return 1
  printf '%s %s trace=%s\n' "$(elapsed)" "$fields" \
    "$(stat -c %s "$trace" 2>/dev/null || echo 0)" >>"$out/samples.txt"
}
while sample; do
  sleep "$every"
done
status=0
wait "$runner" || status=$?
echo "== the harness exited $status after $(elapsed) s"
sed -n 2p "$out/harness.out" | cut -c1-60
tail -n 1 "$out/harness.out"

"$python" - "$out" "$frames" "$status" "$settled" "$slack" "$with_shim" "$trace" <<'EOF'
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.getcwd(), "scripts"))
import pftrace

out, frames, status, settled_percent, slack = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]),
                                               float(sys.argv[4]), int(sys.argv[5]))
with_shim = sys.argv[6] == "1"
samples = []
for line in open(out + "/samples.txt"):
    seconds, *fields = line.split()
    samples.append((float(seconds), {k.rstrip(":"): int(v) for k, v in (f.split("=") for f in fields)}))
failures = []
if len(samples) < 2:
    sys.exit("soak: fewer than two memory samples")
first, last = samples[0], samples[-1]
settled = next(s for s in samples if s[0] >= last[0] * settled_percent / 100)
print("== memory (kB)      %8s %8s %8s %8s %8s %12s" % ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem", "trace bytes"))
for label, (seconds, s) in (("start %.1f s" % first[0], first), ("settled %.1f s" % settled[0], settled),
                            ("end %.1f s" % last[0], last)):
    print("  %-16s %8d %8d %8d %8d %8d %12d" % (label, s["VmRSS"], s["VmHWM"], s["RssAnon"], s["RssFile"],
                                              s["RssShmem"], s["trace"]))
growth = last[1]["VmRSS"] - settled[1]["VmRSS"]
print("  VmRSS from %.1f s to the end: %+d kB (allowed %d), %d samples" % (settled[0], growth, slack, len(samples)))
if growth > slack:
    failures.append("memory grew by %d kB" % growth)

header = open(out + "/harness.out").read().splitlines()
if status != 0 or len(header) < 2 or not header[1].startswith("frames=%d errors=0 " % frames):
    failures.append("the harness did not run %d frames cleanly (exit %d)" % (frames, status))

if not with_shim:
    sys.exit("soak: FAILED: " + "; ".join(failures) if failures else "== soak (without the shim): passed")
trace = sys.argv[7]
began = time.monotonic()
if trace.endswith(".pftrace"):
    with open(trace, "rb") as f:
        data = f.read()
    # Frames are async ranges (a track each, domain nvtxshim); control transfers slices.
    events = list(pftrace.events(data))
    frame_numbers = sorted(int(e.name[6:]) for e in events
                           if e.type == pftrace.BEGIN and e.track and e.categories[:1] == ["nvtxshim"]
                           and re.fullmatch(r"frame \d+", e.name or ""))
    controls = sum(1 for e in events if e.type == pftrace.BEGIN and not e.track
                   and (e.name or "").startswith("libusb_control_transfer"))
    how = "read with scripts/pftrace.py"
else:
    with open(trace) as f:
        events = json.load(f)  # complete JSON (the closed bare array), or this fails
    # Frames are async pairs: one begin each.
    frame_numbers = sorted(int(e["name"][6:]) for e in events
                           if e.get("ph") == "b" and e.get("cat") == "nvtxshim" and re.fullmatch(r"frame \d+", e["name"]))
    controls = sum(1 for e in events if e.get("ph") == "X" and e["name"].startswith("libusb_control_transfer"))
    how = "json.load"
loaded = time.monotonic() - began
print("== trace: %d events, %d frames, %d control transfers; %s took %.1f s" % (
    len(events), len(frame_numbers), controls, how, loaded))
if frame_numbers != list(range(1, frames + 1)):
    failures.append("the trace does not hold frames 1..%d exactly" % frames)
if controls != frames:
    failures.append("%d control transfers in the trace, not %d" % (controls, frames))
if failures:
    sys.exit("soak: FAILED: " + "; ".join(failures))
print("== soak: passed")
EOF
