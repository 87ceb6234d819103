"""nvtxshim top (cli/commands/top.c): a live view of the example harness's trace while it records on the
emulated camera, paced at 50 frames a second so that the run lasts seconds: top shows the frames
growing while the program runs, ends by itself when the program ends, and its last view's
frames, p50, p99 and max are the final report's. nvtxshim run --top does the same around the
program it starts, keeps the program's exit status and removes the trace it made. Nothing here
waits on a clock: each run ends when the program does."""
import os
import re
import subprocess

import pytest

from conftest import SHIM, STUB, Device, clean_env, program, run

FRAMES = 120
FPS = 50
ON_ACT = {"NVTXSHIM_FRAME": "call:libusb_control_transfer", "LD_LIBRARY_PATH": STUB}
VIEW = re.compile(r"process \d+ \(harness_physical\): (\d+) frames so far: p50 (\d+\.\d{3}), "
                  r"p99 (\d+\.\d{3}), max (\d+\.\d{3}) ms")


def harness(frames=FRAMES):
    return [program("harness_physical"), "--frames", str(frames), "--fps", str(FPS)]


def views(output):
    """[(frames, p50, p99, max)] of each view in OUTPUT, in order."""
    return [(int(m.group(1)), m.group(2), m.group(3), m.group(4)) for m in VIEW.finditer(output)]


def final_report(trace):
    """(frames, p50, p99, max) of the frame time, from nvtxshim report."""
    result = subprocess.run([program("nvtxshim"), "report", str(trace)], env=clean_env(),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    rows = {}
    # total, the first column: after "mean of N", "p50", "p99", "max" (the other columns are
    # those the run's frames spent time in)
    for line in result.stdout.split("== Per frame", 1)[1].splitlines()[2:6]:
        words = line.split()
        label = 3 if words[0] == "mean" else 1
        rows[" ".join(words[:label])] = words[label]
    mean = [key for key in rows if key.startswith("mean of ")][0]
    return int(mean.split()[-1]), rows["p50"], rows["p99"], rows["max"]


@pytest.mark.parametrize("form", ["json", "pftrace"])
def test_top_follows_a_running_program_and_ends_with_its_report(tmp_path, form):
    trace = tmp_path / ("live." + form)
    device = Device(FRAMES, [])
    env = clean_env(dict(ON_ACT, NVTXSHIM_TRACE=str(trace), NVS_TEST_SHIM=SHIM))
    argv = device.wrap(["sh", "-c", 'LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$NVS_TEST_SHIM" '
                        'exec "$@"', "sh"] + harness())
    program_run = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        top = subprocess.run([program("nvtxshim"), "top", "--interval", "0.2", str(trace)],
                             env=clean_env(), capture_output=True, text=True, timeout=300)
    finally:
        out, err = program_run.communicate(timeout=300)
    assert program_run.returncode == 0 and b"frames=%d errors=0" % FRAMES in out, err
    assert top.returncode == 0, top.stderr
    assert top.stderr in ("", "nvtxshim: top: waiting for %s to be written\n" % trace)
    seen = views(top.stdout)
    # Live: the frames grew from view to view while the program ran.
    counts = [frames for frames, *_ in seen]
    assert len(set(counts)) >= 2 and counts == sorted(counts), counts
    # Ended by itself with the program, on its last frame: the report's figures.
    assert seen[-1] == final_report(trace)
    # The slowest frame's longest calls, longest first: five of the harness's own (its USB
    # transfers and its CUDA calls; which of them is longest in that frame is the scheduler's
    # to say: a stream synchronize and a transfer take about as long).
    longest = re.search(r"the longest calls in it: (.*)",
                        top.stdout.rsplit("nvtxshim top:", 1)[1]).group(1)
    calls = [(name, float(ms)) for name, ms in re.findall(r"(?:^|, )(.+?) (\d+\.\d{3}) ms", longest)]
    assert len(calls) == 5 and all(name.startswith(("libusb_", "cu")) for name, _ in calls), longest
    assert [ms for _, ms in calls] == sorted((ms for _, ms in calls), reverse=True), longest


def test_run_top_shows_its_program_and_keeps_its_exit_status(tmp_path):
    device = Device(FRAMES, [])
    result = run([program("nvtxshim"), "run", "--top", "--frame", "call:libusb_control_transfer",
                  "--"] + harness(), env={"LD_LIBRARY_PATH": STUB, "TMPDIR": str(tmp_path)},
                 shim=False, device=device, timeout=300)
    output = result.stdout.decode()
    assert result.returncode == 0, result.stderr
    assert "frames=%d errors=0" % FRAMES in output          # the program's own output
    seen = views(output)
    assert seen and seen[-1][0] == FRAMES, output[-3000:]
    assert os.listdir(tmp_path) == []                        # its temporary trace is gone
    # The program's exit status is run's: a program that cannot start.
    missing = run([program("nvtxshim"), "run", "--top", "--", str(tmp_path / "no-such-program")],
                  shim=False, timeout=60)
    assert missing.returncode == 127


def test_once_on_a_finished_trace_and_on_one_without_frames(tmp_path):
    done = tmp_path / "done.json"
    result = run(harness(20), env=dict(ON_ACT, NVTXSHIM_TRACE=str(done)), device=Device(20, []))
    assert result.returncode == 0
    once = subprocess.run([program("nvtxshim"), "top", "--once", str(done)], env=clean_env(),
                          capture_output=True, text=True, timeout=60)
    assert once.returncode == 0 and [v[0] for v in views(once.stdout)] == [20]
    plain = tmp_path / "plain.json"
    result = run(harness(5), env={"NVTXSHIM_TRACE": str(plain), "LD_LIBRARY_PATH": STUB},
                 device=Device(5, []))
    assert result.returncode == 0
    none = subprocess.run([program("nvtxshim"), "top", "--once", str(plain)], env=clean_env(),
                          capture_output=True, text=True, timeout=60)
    assert none.returncode == 1 and "no frames yet" in none.stdout
    missing = subprocess.run([program("nvtxshim"), "top", "--once", str(tmp_path / "nothing")],
                             env=clean_env(), capture_output=True, text=True, timeout=60)
    assert missing.returncode == 1 and missing.stderr.startswith("nvtxshim: top: cannot read ")
    # A FIFO is not followed (it would be read empty, and its writer's data taken): one line.
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    refused = subprocess.run([program("nvtxshim"), "top", str(fifo)], env=clean_env(),
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1 and refused.stderr == (
        "nvtxshim: top: %s is not a regular file: top follows a trace file as it grows\n" % fifo)


@pytest.mark.parametrize("args,message", [
    ([], "which file? nvtxshim top FILE (the trace a program is writing)"),
    (["--interval", "0", "x"], "--interval needs seconds, 0.05 to 3600: '0'"),
    (["--frames", "0", "x"], "--frames needs a number of frames, 1 or more: '0'"),
    (["a", "b"], "one file at a time: 'b' is one too many"),
])
def test_usage_errors_are_one_line(args, message):
    result = subprocess.run([program("nvtxshim"), "top"] + args, env=clean_env(),
                            capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "nvtxshim: top: %s (nvtxshim top --help)\n" % message
