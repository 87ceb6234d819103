#!/usr/bin/env bash
# docs/report-page.png, the README's picture, from a real run: the example harness on the
# emulated camera (build/emucam), its CUDA calls on the test stand-in driver, recorded by
# `nvtxshim run` for FRAMES frames unpaced with a 4 ms frame budget, its page written by
# `nvtxshim report --html` and drawn by headless Chromium. The run's files stay in
# build/picture. Needs `make demo`'s programs (it builds them) and chromium.
#
#   scripts/picture.sh [FRAMES]      (default 12000; about a minute)
set -euo pipefail
cd "$(dirname "$0")/.."
frames=${1:-12000}
out=build/picture
command -v chromium >/dev/null || { echo "picture: chromium is needed (apt-get install chromium)" >&2; exit 1; }
make --no-print-directory all build/harness_physical build/emucam build/test/stub/libcuda.so.1 >/dev/null
rm -rf "$out" && mkdir -p "$out"
build/nvtxshim run --frame call:libusb_control_transfer --frame-budget 4ms --trace "$out/rig.pftrace" \
  -- build/emucam --width 320 --height 240 -- \
  env LD_LIBRARY_PATH="$PWD/build/test/stub" build/harness_physical --frames "$frames" \
  --width 320 --height 240 --async --threads --fps 0 >"$out/run.log"
build/nvtxshim report "$out/rig.pftrace" --html "$out/rig.html" >"$out/report.txt"
# the page's first screenful at a laptop's width: the header, the frames plot, the histogram
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,1500 \
  --screenshot="$PWD/docs/report-page.png" "file://$PWD/$out/rig.html" 2>/dev/null
echo "picture: docs/report-page.png from $out/rig.html ($frames frames)"
