#!/usr/bin/env bash
# make demo: the example harness (USB camera + actuator, inference, X11 GUI) on
# the emulated device, with its GUI on a private Xvfb, profiled by Nsight
# Systems with libnvtxshim in front of it; then what the profile says.
# Without nsys, the same run writes an NVTXSHIM_TRACE file and that is summarised.
#
#   DEMO_FRAMES=240  frames to run         DEMO_FPS=60   the loop's pace (0: unpaced)
#   DEMO_OUT=build/demo  where results go  DEMO_TIMEOUT=300  seconds nsys may take
#   NSYS=nsys        the nsys to use (a name not on PATH: the trace-file fallback)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${DEMO_OUT:-build/demo}
frames=${DEMO_FRAMES:-240}
fps=${DEMO_FPS:-60}
limit=${DEMO_TIMEOUT:-300}
nsys=${NSYS:-nsys}
shim=$PWD/build/libnvtxshim.so
width=320 height=240
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/report.* "$out"/trace.json "$out"/xvfb.fifo

# A private X server: Xvfb picks a free display and writes its number to the
# fifo when it is ready to accept clients.
mkfifo "$out/xvfb.fifo"
Xvfb -displayfd 3 -screen 0 1024x768x24 -nolisten tcp 3>"$out/xvfb.fifo" >/dev/null 2>&1 &
xvfb=$!
trap 'kill $xvfb 2>/dev/null || true' EXIT
read -r number <"$out/xvfb.fifo"
display=:$number
rm -f "$out/xvfb.fifo"

# The GPU when there is one; otherwise the test suite's stand-in driver, so the
# CUDA copies still show (they take no GPU time then). Only the harness gets the
# stand-in: nsys itself must not load it.
trace_apis=nvtx,osrt
driver=()
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  trace_apis=nvtx,osrt,cuda
  gpu_note="inference on the GPU"
else
  driver=(env "LD_LIBRARY_PATH=$PWD/build/test/stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  gpu_note="no GPU here: the CUDA calls go to the test stand-in driver (build/test/stub)"
fi

device=(build/emucam --width "$width" --height "$height" --)
# The shim is appended to LD_PRELOAD inside the device runner, after umockdev's
# and nsys's own preload libraries (replacing LD_PRELOAD would drop them).
append_shim=(sh -c 'LD_PRELOAD="$LD_PRELOAD:'"$shim"'" exec "$@"' sh)
program=("${driver[@]}" build/harness_physical --frames "$frames" --width "$width" --height "$height"
         --async --threads --fps "$fps" --use_gui=1)
# A frame begins with the actuator command, the loop's first call. nsys records
# only a window of frames, past the warm-up: the shim opens and closes it.
first=$((frames * 5 / 12)) count=$((frames / 5))
[ "$first" -ge 1 ] || first=1
[ "$count" -ge 2 ] || count=2
export NVTXSHIM_FRAME=call:libusb_control_transfer NVTXSHIM_FRAME_BUDGET=20ms DISPLAY=$display
export NVTXSHIM_CAPTURE=frames:$first+$count

echo "== demo: ${program[*]: -13}"
echo "   on the emulated camera ($width x $height), GUI on Xvfb $display; $gpu_note"
echo "   frames counted at each libusb_control_transfer (NVTXSHIM_FRAME=$NVTXSHIM_FRAME);"
echo "   nsys records frames $first-$((first + count - 1)) (NVTXSHIM_CAPTURE=$NVTXSHIM_CAPTURE)"
if command -v "$nsys" >/dev/null 2>&1; then
  # CPU sampling and context-switch tracing stay off: with them nsys 2022.4's
  # agent can spin after the program exits (DESIGN.md). A watchdog bounds the
  # run anyway, and then also ends that session's agent, which outlives nsys.
  ( exec "$nsys" profile -t "$trace_apis" --sample=none --cpuctxsw=none --export none \
      -c nvtx -p capture@nvtxshim --capture-range-end=stop \
      -o "$out/report" --force-overwrite true \
      "${device[@]}" "${append_shim[@]}" "${program[@]}" ) > >(tr '\r' '\n' | grep -v '^\[1/1\]' || true) 2>&1 &
  profiler=$!
  sleep "$limit" >/dev/null 2>&1 &
  sleeper=$!
  wait -n "$profiler" "$sleeper" || true
  kill -KILL "$profiler" 2>/dev/null || true
  kill "$sleeper" 2>/dev/null || true
  wait "$profiler" 2>/dev/null || true
  if [ ! -f "$out/report.nsys-rep" ]; then
    pkill -KILL -f -- "--session-name=profile-.*-$profiler\$" 2>/dev/null || true
    echo "demo: nsys made no report (nsys 2022.4 sometimes hangs: DESIGN.md); run make demo again" >&2
    exit 1
  fi
  "$nsys" export --type sqlite --force-overwrite true -o "$out/report.sqlite" "$out/report.nsys-rep" \
    >/dev/null 2>&1
  echo
  echo "== report: $out/report.nsys-rep (open it in Nsight Systems: nsys-ui $out/report.nsys-rep)"
  echo "   SQLite export: $out/report.sqlite"
  echo
  python3 scripts/report.py "$out/report.sqlite"
  echo "   (rest: time in none of these calls: the loop's own work, waiting for the capture"
  echo "    thread, and the --fps pacing)"
else
  echo "   ($nsys not found: the trace file instead)"
  NVTXSHIM_TRACE=$out/trace.json "${device[@]}" "${append_shim[@]}" "${program[@]}"
  echo
  echo "== trace: $out/trace.json (open it in https://ui.perfetto.dev or chrome://tracing)"
  echo
  python3 scripts/report.py "$out/trace.json"
  echo "   (rest: time in none of these calls: the loop's own work, waiting for the capture"
  echo "    thread, and the --fps pacing)"
fi
