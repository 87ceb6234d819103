"""CUDA driver copies against the stand-in libcuda.so.1 (test/cuda/stub_libcuda.c):
every way a program reaches the driver, through the recorder."""
import collections
import os

import pytest

from conftest import STUB, load_trace, program, ranges, run

MODES = ["linked", "dlsym", "getproc", "getproc-ptds", "getproc-v1", "loader"]
EXPECTED = {
    ("cuMemcpyHtoD 64KiB pageable", 65536): 1,
    ("cuMemcpyHtoD 64KiB pinned", 65536): 1,
    ("cuMemcpyDtoD 64KiB", 65536): 1,
    ("cuMemcpyDtoH 64KiB pinned", 65536): 1,
    ("cuMemcpyHtoDAsync 64KiB pinned", 65536): 1,
    ("cuMemcpyDtoHAsync 64KiB pageable", 65536): 1,
    ("cuMemcpy 64KiB DtoH pageable", 65536): 1,
    ("cuMemcpy2D 16KiB HtoD pageable", 16384): 1,
    # One buffer: pageable, then registered, then unregistered: the cache follows.
    ("cuMemcpyHtoD 4KiB pageable", 4096): 2,
    ("cuMemcpyHtoD 4KiB pinned", 4096): 1,
}


def copies(mode, tmp_path, env=None):
    argv = [program("test/cuda_copies"), mode]
    base = {"LD_LIBRARY_PATH": STUB}
    trace = tmp_path / ("%s.json" % mode)
    plain = run(argv, env=base, shim=False)
    shimmed = run(argv, env=dict(base, NVTXSHIM_TRACE=str(trace), **(env or {})))
    assert plain.returncode == 0, plain.stderr
    assert (shimmed.stdout, shimmed.stderr, shimmed.returncode) == (
        plain.stdout, plain.stderr, plain.returncode)
    # No traced call, no event, no file.
    return plain.stdout.decode(), load_trace(trace) if trace.exists() else []


@pytest.mark.parametrize("mode", MODES)
def test_every_way_to_the_driver_shows_each_copy(tmp_path, mode):
    output, events = copies(mode, tmp_path)
    copied = [e for e in ranges(events, "cuda") if e["args"]["category"] == "copy"]
    cuda = collections.Counter((e["name"], e["args"]["payload"]) for e in copied)
    assert cuda == EXPECTED
    # The one wait between the copies is a range of its own (test_cuda_waits.py).
    assert [(e["name"], e["args"]["category"]) for e in ranges(events, "cuda") if e not in copied] == [
        ("cuStreamSynchronize", "wait")]
    # With the per-thread flag the driver hands out _ptds/_ptsz variants (11 copies
    # and the wait); the wrappers call those same variants (the stand-in counts
    # them), and the names drop the suffix.
    assert ("per-thread variants: 12" in output) == (mode == "getproc-ptds")


@pytest.mark.parametrize("marker, expected", [("cuda.htod", 7), ("cuda.dtoh", 3)])
def test_copy_direction_frame_markers(tmp_path, marker, expected):
    _, events = copies("getproc", tmp_path, {"NVTXSHIM_FRAME": marker})
    assert sorted(e["name"] for e in ranges(events, "nvtxshim")) == sorted(
        "frame %d" % n for n in range(1, expected + 1))


def test_cuda_hooks_off_leaves_the_driver_alone(tmp_path):
    _, events = copies("loader", tmp_path, {"NVTXSHIM_HOOKS": "usb,x11"})
    assert ranges(events, "cuda") == []


def test_runtime_copies_are_one_range_each(tmp_path):
    """A dynamically loaded runtime (the stand-in reaches the stand-in driver
    through cuGetProcAddress_v2, as the real one does): each runtime copy is one
    range, the driver copy inside it is not shown again, and a driver entry
    point from cudaGetDriverEntryPointByVersion is traced."""
    argv = [program("test/runtime_copies")]
    trace = tmp_path / "runtime.json"
    plain = run(argv, env={"LD_LIBRARY_PATH": STUB}, shim=False)
    shimmed = run(argv, env={"LD_LIBRARY_PATH": STUB, "NVTXSHIM_TRACE": str(trace)})
    assert plain.returncode == 0, plain.stderr
    assert (shimmed.stdout, shimmed.stderr, shimmed.returncode) == (
        plain.stdout, plain.stderr, plain.returncode)
    cuda = collections.Counter((e["name"], e["args"]["payload"]) for e in ranges(load_trace(trace), "cuda"))
    assert cuda == {
        ("cudaMemcpy 64KiB HtoD pageable", 65536): 1,
        ("cudaMemcpy 64KiB HtoD pinned", 65536): 1,
        ("cudaMemcpy 64KiB DtoH pageable", 65536): 1,
        ("cudaMemcpy 64KiB DtoH pinned", 65536): 1,      # cudaMemcpyDefault: the driver said which way
        ("cudaMemcpyAsync 64KiB HtoD pinned", 65536): 1,
        ("cudaMemcpy2D 16KiB HtoD pageable", 16384): 1,
        ("cudaMemcpyToSymbol 4KiB HtoD pageable", 4096): 1,
        ("cudaMemcpyFromSymbol 4KiB DtoH pageable", 4096): 1,
        ("cuMemcpyHtoD 4KiB pinned", 4096): 1,           # through cudaGetDriverEntryPointByVersion
    }


def test_the_library_never_initialises_cuda():
    # A context made by the shim would break a program that forks after (a
    # PyTorch DataLoader): the library only asks about pointers being copied.
    from conftest import ROOT
    forbidden = ("cuInit", "cuCtxCreate", "cuDevicePrimaryCtxRetain", "cuCtxSetCurrent",
                 "cudaSetDevice", "cudaFree(", "cudaMalloc")
    for directory, _, files in os.walk(os.path.join(ROOT, "libnvtxshim")):
        for name in files:
            with open(os.path.join(directory, name)) as f:
                text = f.read()
            assert not [word for word in forbidden if word in text], name


def size_name(length):
    """cuda.c's format_bytes: the largest unit that divides the length exactly."""
    for unit, name in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if length % unit == 0:
            return "%d%s" % (length // unit, name)
    return "%dB" % length


def test_more_shapes_of_a_copy_than_its_name_table_holds_are_each_named_right(tmp_path):
    """12,000 lengths of a copy each way, 24,000 shapes in the CUDA domain's table of 8,192
    names: shapes whose slot another holds are found further on, and those past a full table
    are named at each call. Every range says its own length, in its name and its payload."""
    shapes = 12000
    argv = [program("test/cuda_copies"), "linked", str(shapes)]
    base = {"LD_LIBRARY_PATH": STUB}
    trace = tmp_path / "shapes.json"
    plain = run(argv, env=base, shim=False)
    shimmed = run(argv, env=dict(base, NVTXSHIM_TRACE=str(trace)))
    assert plain.returncode == 0 and b"shapes %d: " % shapes in plain.stdout, plain.stderr
    assert (shimmed.stdout, shimmed.stderr, shimmed.returncode) == (
        plain.stdout, plain.stderr, plain.returncode)
    copied = [e for e in ranges(load_trace(trace), "cuda") if e["args"]["category"] == "copy"]
    named = collections.Counter((e["name"], e["args"]["payload"]) for e in copied)
    for length in range(1, shapes + 1):
        for way in ("HtoD", "DtoH"):
            key = ("cuMemcpy%s %s pageable" % (way, size_name(length)), length)
            # 4 KiB and 64 KiB are copied by the first part as well (EXPECTED)
            assert named.pop(key, 0) >= 1, key
    assert set(named) <= set(EXPECTED), named


def test_a_frame_pointer_walk_from_inside_the_driver_reaches_the_program(tmp_path):
    """A profiler that walks frame pointers (perf -g, nsys --backtrace=fp) from inside a
    hooked call finds the program's frames above it. The stand-in driver, built with frame
    pointers, walks the chain from inside a copy, a wait and a launch that test/frame_chain
    (built with them too) makes from functions of its own, and the program prints the
    functions of its own the walk passed. Without the shim: the calling function, then main.
    Through the shim's traced calls, recording and under another NVTX tool: main last (the
    library keeps rbp out of its registers, so its frames pass the walk on; the calling
    function is skipped, as past any function that keeps no frame). Before, a traced copy's
    and launch's walk ended inside the library, where rbp held one of the call's arguments."""
    argv = [program("test/frame_chain")]
    plain = run(argv, env={"LD_LIBRARY_PATH": STUB}, shim=False)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.decode().splitlines() == [
        "cuMemcpyHtoD: copy_from_the_program main", "cuStreamSynchronize: wait_in_the_program main",
        "cuLaunchKernel: launch_from_the_program main"]
    trace = tmp_path / "frames.json"
    for tool in ({"NVTXSHIM_TRACE": str(trace)},
                 {"NVTX_INJECTION64_PATH": program("test/libnull_tool_errno.so")}):
        shimmed = run(argv, env=dict(tool, LD_LIBRARY_PATH=STUB))
        assert shimmed.returncode == 0, shimmed.stderr
        lines = shimmed.stdout.decode().splitlines()
        assert [line.split(":")[0] for line in lines] == [
            "cuMemcpyHtoD", "cuStreamSynchronize", "cuLaunchKernel"]
        for line in lines:
            assert line.split()[-1] == "main", (tool, line)
    # the calls were traced (the walks went through the traced halves)
    assert {"cuMemcpyHtoD 64B pageable", "cuStreamSynchronize",
            "cuLaunchKernel nvs_stub_kernel_a"} <= {e["name"] for e in load_trace(trace)}
