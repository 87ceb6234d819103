#!/usr/bin/env bash
# make demo: the example harness (USB camera + actuator, inference, X11 GUI) on
# the emulated device, with its GUI on a private Xvfb, profiled by Nsight
# Systems with libnvtxshim in front of it; then what the profile says.
# Without nsys, the same run writes an NVTXSHIM_TRACE file and that is summarised.
# Both through the nvtxshim command (build/nvtxshim: profile, run, report), each
# report also written as a page (report --html: build/demo/report.html, rig.html).
#
#   DEMO_FRAMES=240  frames to run         DEMO_FPS=60   the loop's pace (0: unpaced)
#   DEMO_OUT=build/demo  where results go  DEMO_TIMEOUT=300  seconds nsys may take
#   NSYS=nsys        the nsys to use (a name not on PATH: the trace-file fallback)
#   DEMO_FINISH_TIMEOUT=300  seconds nsys may spend with no program running (starting up,
#                    writing the report): a hang of nsys's own, told from the program's time
set -euo pipefail
cd "$(dirname "$0")/.."
out=${DEMO_OUT:-build/demo}
frames=${DEMO_FRAMES:-240}
fps=${DEMO_FPS:-60}
limit=${DEMO_TIMEOUT:-300}
finish_limit=${DEMO_FINISH_TIMEOUT:-300}
nsys=${NSYS:-nsys}
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
# CUDA calls still show: the copies (they take no GPU time then), the kernel
# launches (the stand-in runs the kernels on the CPU, inside the launch) and the
# loop's wait for the GPU (a 0.2 ms sleep in cuStreamSynchronize). Only the
# harness gets the stand-in: nsys itself must not load it.
apis=osrt
driver=()
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  apis=osrt,cuda
  gpu_note="inference on the GPU"
else
  driver=(env "LD_LIBRARY_PATH=$PWD/build/test/stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  gpu_note="no GPU here: the CUDA calls go to the test stand-in driver (build/test/stub)"
fi

device=(build/emucam --width "$width" --height "$height" --)
program=("${driver[@]}" build/harness_physical --frames "$frames" --width "$width" --height "$height"
         --async --threads --fps "$fps" --use_gui=1)
# A frame begins with the actuator command, the loop's first call. nsys records
# only a window of frames, past the warm-up: the shim opens and closes it.
first=$((frames * 5 / 12)) count=$((frames / 5))
[ "$first" -ge 1 ] || first=1
[ "$count" -ge 2 ] || count=2
budget=20ms
shim=(--frame call:libusb_control_transfer --frame-budget "$budget")
export DISPLAY=$display

echo "== demo: ${program[*]: -13}"
echo "   on the emulated camera ($width x $height), GUI on Xvfb $display; $gpu_note"
echo "   frames counted at each libusb_control_transfer (--frame call:libusb_control_transfer);"
echo "   nsys records frames $first-$((first + count - 1)) (--capture frames:$first+$count)"
if command -v "$nsys" >/dev/null 2>&1; then
  # nvtxshim profile appends the library to LD_PRELOAD after nsys's and umockdev's
  # preload libraries, adds the matching nsys options (-c nvtx -p capture@nvtxshim),
  # bounds nsys with a watchdog (nsys 2022.4's agent can outlive the program), exports the
  # report and prints its summary.
  echo "   nvtxshim profile ${shim[*]} --capture frames:$first+$count --apis $apis -- PROGRAM"
  # (nsys's progress bar is left out of the demo's output.)
  set +e
  build/nvtxshim profile "${shim[@]}" --capture "frames:$first+$count" --apis "$apis" \
    --nsys "$nsys" --timeout "$limit" --finish-timeout "$finish_limit" --output "$out/report" --force \
    -- "${device[@]}" "${program[@]}" 2>&1 | { tr '\r' '\n' | grep -v '^\[1/1\]'; }
  status=${PIPESTATUS[0]}
  set -e
  if [ ! -f "$out/report.nsys-rep" ]; then
    echo "demo: nsys made no report (nsys 2022.4 sometimes hangs after the program: docs/ARCHITECTURE.md, "The tools"); run make demo again" >&2
    exit 1
  fi
  # The same figures as a page (its summary is the one printed above), with the budget's line
  # (the library marks only the frames over it).
  build/nvtxshim report "$out/report.sqlite" --budget "$budget" --html "$out/report.html" >/dev/null \
    || status=$?
else
  echo "   ($nsys not found: the trace file instead)"
  echo "   nvtxshim run ${shim[*]} --trace trace.json -- PROGRAM; nvtxshim report trace.json"
  status=0
  build/nvtxshim run "${shim[@]}" --capture "frames:$first+$count" --trace "$out/trace.json" \
    -- "${device[@]}" "${program[@]}" || status=$?
  echo
  echo "== trace: $out/trace.json (open it in https://ui.perfetto.dev or chrome://tracing)"
  echo
  build/nvtxshim report "$out/trace.json" --budget "$budget" --html "$out/report.html"
fi
echo "   (rest: time in none of these calls: the loop's own work, waiting for the capture"
echo "    thread, and the --fps pacing)"
echo "== page: $out/report.html (open it in a browser)"

# A second run as a camera rig, when the V4L2 camera double is built: the harness captures from
# /dev/video0 (build/test/libemuv4l2.so, preloaded after the library so that the library's hooks
# see the calls first) and acts through a servo on a pty (examples/emuservo.py); the trace's
# report has the camera and serial columns and the capture-to-actuation latency.
#   DEMO_RIG_FRAME=v4l2.in  the frame marker   DEMO_RIG_DELAY_MS=5  the camera's delay
emuv4l2=$PWD/build/test/libemuv4l2.so
if [ -f "$emuv4l2" ]; then
  rm -f "$out/servo.path" "$out/rig.json" "$out/rig.html"
  python3 examples/emuservo.py --path-file "$out/servo.path" --timeout 30 >/dev/null &
  servo=$!
  trap 'kill $xvfb 2>/dev/null || true; kill $servo 2>/dev/null || true' EXIT
  for _ in $(seq 200); do [ -f "$out/servo.path" ] && break; sleep 0.05; done
  pts=$(cat "$out/servo.path")
  echo
  echo "== demo, as a camera rig: V4L2 camera /dev/video0 (the double, build/test/libemuv4l2.so),"
  echo "   servo on $pts (examples/emuservo.py)"
  echo "   nvtxshim run --frame ${DEMO_RIG_FRAME:-v4l2.in} --trace rig.json -- PROGRAM --camera v4l2:/dev/video0 --actuator serial:$pts"
  EMUV4L2_DEVICE=/dev/video0 EMUV4L2_DELAY_MS=${DEMO_RIG_DELAY_MS:-5} NVTXSHIM_DEVICES="$pts" \
    build/nvtxshim run --frame "${DEMO_RIG_FRAME:-v4l2.in}" --trace "$out/rig.json" \
    -- sh -c 'LD_PRELOAD="$LD_PRELOAD:$0" exec "$@"' "$emuv4l2" \
    "${driver[@]}" build/harness_physical --frames "$frames" --camera v4l2:/dev/video0 \
    --actuator "serial:$pts" --fps "$fps" || status=$?
  wait "$servo" || true
  echo
  echo "== trace: $out/rig.json"
  echo
  build/nvtxshim report "$out/rig.json" --html "$out/rig.html" || status=$?
  echo "== page: $out/rig.html"
fi
exit "$status"
