#!/usr/bin/env bash
# make demo: the example capture loop on the emulated camera + actuator, under
# Nsight Systems with libnvtxshim, then the NVTX summary and a Perfetto trace.
# CPU sampling and context-switch tracing stay off: with them nsys 2022.4's agent
# often spins forever after the program exits (see test/nsys.py).
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/demo
frames=${DEMO_FRAMES:-60}
shim=$PWD/build/libnvtxshim.so
mkdir -p "$out"
device=(build/emucam --)
program=(build/usb_capture --frames "$frames" --async)
# The shim is appended to LD_PRELOAD inside the device runner, after umockdev's preload.
append_shim=(sh -c 'LD_PRELOAD="$LD_PRELOAD:'"$shim"'" exec "$@"' sh)

echo "== 1. the unmodified program under nsys, with the shim (frames counted on each camera frame)"
rm -f "$out/report.nsys-rep" "$out/report.sqlite"
NVTXSHIM_FRAME=usb.in:0x81 NVTXSHIM_FRAME_BUDGET=5ms \
  timeout 180 nsys profile -t nvtx,osrt --sample=none --cpuctxsw=none -o "$out/report" --force-overwrite true \
  "${device[@]}" "${append_shim[@]}" "${program[@]}" 2>&1 | tr '\r' '\n' | grep -v '^\[1/1\]' || true
if [ ! -f "$out/report.nsys-rep" ]; then
  echo "demo: nsys made no report (see DESIGN.md on nsys 2022.4 hangs); try again" >&2
  exit 1
fi

echo
echo "== 2. what nsys saw: the NVTX ranges the shim added (nsys stats, nvtxsum)"
nsys stats -q --report nvtxsum --format column "$out/report.nsys-rep" > "$out/nvtxsum.txt" 2>/dev/null || true
# awk reads to the end: head would close the pipe early (SIGPIPE under pipefail).
sed -n '/Range/,$p' "$out/nvtxsum.txt" | awk 'NR <= 14' | cut -c1-160
echo "  ... (one 'frame N' range per camera frame follows)"

echo
echo "== 3. the same run without nsys: NVTXSHIM_TRACE writes a Chrome/Perfetto trace"
NVTXSHIM_TRACE="$PWD/$out/trace.json" NVTXSHIM_FRAME=usb.in:0x81 \
  "${device[@]}" "${append_shim[@]}" "${program[@]}" >/dev/null
python3 - "$out/trace.json" <<'PY'
import collections, json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
calls = collections.defaultdict(list)
for e in events:
    if e["ph"] == "X":
        calls[(e["cat"], e["name"].split(" ")[0])].append(e["dur"])
print("  %-9s %-40s %6s %12s" % ("domain", "call", "count", "mean (us)"))
for (domain, name), durations in sorted(calls.items()):
    print("  %-9s %-40s %6d %12.1f" % (domain, name, len(durations), sum(durations) / len(durations)))
marks = [e["name"] for e in events if e["ph"] == "i"]
print("  %d marks%s" % (len(marks), (": " + marks[0] + " ...") if marks else ""))
PY
echo
echo "Open $out/report.nsys-rep in Nsight Systems, or $out/trace.json in https://ui.perfetto.dev"
