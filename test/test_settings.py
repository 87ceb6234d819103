"""Settings that cannot work get one line each, with what was meant, and the program runs on
unchanged: windows past the largest count, markers and windows whose calls NVTXSHIM_HOOKS
leaves untraced, a stale NVTX_INJECTION64_PATH; a relative NVTXSHIM_TRACE is made absolute
at load."""
import os

import pytest

from conftest import load_trace, names, program, run

ON_ACT = {"NVTXSHIM_FRAME": "call:libusb_control_transfer"}
FRAME_LOOP = ["test/frame_loop", "2"]


def shim_lines(env, make_device):
    argv = [program(FRAME_LOOP[0])] + FRAME_LOOP[1:]
    plain = run(argv, shim=False, device=make_device(frames=2))
    shimmed = run(argv, env=env, device=make_device(frames=2))
    assert (shimmed.stdout, shimmed.returncode) == (plain.stdout, plain.returncode)
    lines = shimmed.stderr.decode().splitlines()
    assert all(line.startswith("nvtxshim: ") for line in lines), lines
    return lines


@pytest.mark.parametrize("window", ["frames:5+18446744073709551615",
                                    "frames:18446744073709551615+2",
                                    "calls:libusb_bulk_transfer:18446744073709551615+2"])
def test_a_window_past_the_largest_count_is_refused(window, make_device):
    lines = shim_lines(dict(ON_ACT, NVTXSHIM_CAPTURE=window), make_device)
    assert lines == [line for line in lines if "NVTXSHIM_CAPTURE='%s' is not valid" % window in line]
    assert len(lines) == 1 and lines[0].endswith("capture stays off"), lines


def test_a_calls_window_whose_calls_are_untraced_is_said(make_device):
    lines = shim_lines({"NVTXSHIM_HOOKS": "usb", "NVTXSHIM_CAPTURE": "calls:cuMemcpyHtoD_v2:1"},
                       make_device)
    assert lines == ["nvtxshim: NVTXSHIM_CAPTURE=calls:cuMemcpyHtoD_v2:1 counts cuda calls, but "
                     "NVTXSHIM_HOOKS=usb leaves them untraced (add cuda to it); capture stays off"]


@pytest.mark.parametrize("marker,group", [("cuda.htod", "cuda"), ("x11.swap", "x11"),
                                          ("call:XFlush", "x11"), ("usb.in", "usb")])
def test_a_frame_marker_whose_calls_are_untraced_is_said(marker, group, make_device):
    hooks = "cuda" if group == "usb" else "usb"
    lines = shim_lines({"NVTXSHIM_HOOKS": hooks, "NVTXSHIM_FRAME": marker}, make_device)
    assert lines == ["nvtxshim: NVTXSHIM_FRAME=%s counts %s calls, but NVTXSHIM_HOOKS=%s leaves "
                     "them untraced (add %s to it); frames stay off" % (marker, group, hooks, group)]


def test_a_stale_injection_path_is_said_and_the_recorder_takes_its_place(tmp_path):
    trace = tmp_path / "t.json"
    result = run([program("test/nvtx_user")], env={"NVTXSHIM_TRACE": str(trace),
                                                   "NVTX_INJECTION64_PATH": "/nonexistent/tool.so"})
    assert result.returncode == 0 and result.stdout == b"nvtx_user done\n"
    assert result.stderr.decode().splitlines() == [
        "nvtxshim: NVTX_INJECTION64_PATH=/nonexistent/tool.so names no file: NVTXSHIM_TRACE=%s "
        "records instead" % trace]
    assert "parent outer" in names(load_trace(trace))


def test_a_relative_trace_path_is_where_the_process_started(tmp_path):
    started, moved = tmp_path / "started", tmp_path / "moved"
    started.mkdir()
    moved.mkdir()
    argv = ["sh", "-c", 'cd "$0" && exec "$@"', str(started), program("test/chdir_record"),
            str(moved)]
    result = run(argv, env={"NVTXSHIM_TRACE": "relative.json"})
    assert result.returncode == 0 and result.stdout == b"recorded\n", result.stderr
    assert os.listdir(moved) == []
    assert names(load_trace(started / "relative.json")) == ["after chdir"]
