"""The CPU's waits for the GPU and kernel launches against the stand-in CUDA driver and runtime
(test/cuda/stub_libcuda.c, stub_libcudart.c): every form, reached every way a program reaches
it, is one range in domain cuda, of category wait or launch, named after the documented API (and
the kernel, where the API names it); what the program sees is what it sees without the shim."""
import collections
import json
import re
import subprocess

import pytest

from conftest import STUB, load_trace, program, ranges, run
from traceformat import end_us

# Each form once, the plain one and its twin (_ptsz, or cuCtxSynchronize_v2); a failed
# cuEventSynchronize is a wait too; cuStreamWaitEvent is not one. Kernel c comes from a module
# loaded after the first was unloaded, at the address kernel a had.
DRIVER_MODES = ["linked", "dlsym", "getproc", "getproc-ptds", "getproc-v1", "loader"]
DRIVER = {
    ("cuStreamSynchronize", "wait"): 3,
    ("cuCtxSynchronize", "wait"): 2,
    ("cuEventSynchronize", "wait"): 2,
    ("cuLaunchKernel nvs_stub_kernel_a", "launch"): 3,
    ("cuLaunchKernel nvs_stub_kernel_b", "launch"): 1,
    ("cuLaunchKernel nvs_stub_kernel_c", "launch"): 1,
    ("cuLaunchKernelEx nvs_stub_kernel_c", "launch"): 1,
    # A CUDA graph's launch (then a cuStreamSynchronize for it): named after the API.
    ("cuGraphLaunch", "launch"): 1,
    # A CUkernel from a library, as the CUDA runtime launches every kernel: named by
    # cuKernelGetName, as the driver gives it (a C program has no C++ runtime to demangle it;
    # under ASan, whose runtime brings a demangler, it is demangled: kinds() reads both as one).
    ("cuLaunchKernel _Z17nvs_stub_kernel_dPi", "launch"): 1,
}
DEMANGLED = {"cuLaunchKernel nvs_stub_kernel_d(int*)": "cuLaunchKernel _Z17nvs_stub_kernel_dPi"}
# The runtime calls the driver's waits and launches inside (through cuGetProcAddress, whose
# answers the shim swaps for its wrappers): one range each all the same. A kernel launched
# while an error of the program's own is pending is not named (asking would need the runtime's
# error state), nor one the runtime cannot name or does not know.
RUNTIME_MODES = ["linked", "dlsym"]
RUNTIME = {
    ("cudaDeviceSynchronize", "wait"): 1,
    ("cudaStreamSynchronize", "wait"): 2,
    ("cudaEventSynchronize", "wait"): 1,
    ("cudaLaunchKernel nvs_stub_kernel_a", "launch"): 3,
    ("cudaLaunchKernel nvs_stub_kernel_b", "launch"): 1,
    ("cudaLaunchKernel", "launch"): 3,
    ("cudaGraphLaunch", "launch"): 2,      # and its _ptsz; the driver's inside is not shown again
}
WAIT_US = 200  # the stand-in's waits sleep this long


def traced(name, mode, tmp_path, env=None):
    """The program's output without and with the shim (the same), and the trace's cuda ranges."""
    argv = [program("test/" + name), mode]
    base = {"LD_LIBRARY_PATH": STUB}
    trace = tmp_path / ("%s-%s.json" % (name, mode))
    plain = run(argv, env=base, shim=False)
    shimmed = run(argv, env=dict(base, NVTXSHIM_TRACE=str(trace), **(env or {})))
    assert plain.returncode == 0, plain.stderr
    assert (shimmed.stdout, shimmed.stderr, shimmed.returncode) == (
        plain.stdout, plain.stderr, plain.returncode)
    events = load_trace(trace) if trace.exists() else []
    return plain.stdout.decode(), events


def kinds(events, demangled=None):
    """(name, category) counts; a name in DEMANGLED (default: the C program's, where a demangler
    may or may not be in the process) counted as its mangled form."""
    aliases = DEMANGLED if demangled is None else demangled
    return collections.Counter((aliases.get(e["name"], e["name"]), e["args"]["category"])
                               for e in ranges(events, "cuda"))


@pytest.mark.parametrize("mode", DRIVER_MODES)
def test_every_way_to_the_driver_shows_each_wait_and_launch_once(tmp_path, mode):
    output, events = traced("cuda_waits", mode, tmp_path)
    assert kinds(events) == DRIVER
    # The range holds the real call: the stand-in's wait is inside it.
    assert all(e["dur"] >= WAIT_US for e in ranges(events, "cuda") if e["args"]["category"] == "wait")
    # Return values (a failed cuEventSynchronize's 400 among them) and errno as without the shim.
    assert "%s: results 0 0 0 0 0 0 400 0 0 0 0 0\n" % mode in output
    assert "errno kept: yes" in output and "launches: 7" in output
    # With the per-thread flag the plain forms are the driver's _ptsz variants too.
    assert "per-thread variants: %d" % (11 if mode == "getproc-ptds" else 2) in output
    assert "same handle for kernels a and c: yes" in output


def test_an_nvtx_tool_that_changes_errno_leaves_the_programs_errno_as_it_was():
    """Under nsys, or any NVTX tool, the shim calls the tool around the real call; a tool that
    makes system calls changes errno (bench/null_tool.c built with NULL_TOOL_CHANGES_ERRNO
    changes it in every call it takes). The program still finds errno as the driver left it, and every range reached the
    tool: a push and a pop for each wait and launch."""
    argv = [program("test/cuda_waits"), "linked"]
    base = {"LD_LIBRARY_PATH": STUB}
    plain = run(argv, env=base, shim=False)
    shimmed = run(argv, env=dict(base, NVTX_INJECTION64_PATH=program("test/libnull_tool_errno.so")))
    assert plain.returncode == 0 and shimmed.returncode == 0, shimmed.stderr
    assert shimmed.stdout == plain.stdout and b"errno kept: yes" in shimmed.stdout
    told = re.search(rb"errno tool: pushes (\d+) pops (\d+)", shimmed.stderr)
    assert told, shimmed.stderr
    assert int(told.group(1)) == int(told.group(2)) >= sum(DRIVER.values())


def test_a_cplusplus_kernel_name_is_demangled_by_the_programs_own_cplusplus_runtime(tmp_path):
    """Found on a real GPU: the runtime launches with CUkernel handles (cuFuncGetName refuses
    them) and kernels have C++ names. With libstdc++ in the process, as in every CUDA C++
    program and PyTorch, the name is the one Nsight Systems shows."""
    _, events = traced("cuda_waits", "getproc", tmp_path, {"LD_PRELOAD": "libstdc++.so.6"})
    expected = dict(DRIVER)
    expected[("cuLaunchKernel nvs_stub_kernel_d(int*)", "launch")] = expected.pop(
        ("cuLaunchKernel _Z17nvs_stub_kernel_dPi", "launch"))
    assert kinds(events, demangled={}) == expected


@pytest.mark.parametrize("mode", RUNTIME_MODES)
def test_runtime_waits_and_launches_are_one_range_each(tmp_path, mode):
    output, events = traced("runtime_waits", mode, tmp_path)
    assert kinds(events) == RUNTIME
    # The program's errors, as cudaGetLastError reports them, are its own (the same as
    # without the shim, checked above): the stand-in answers like this.
    assert "pending 98, launch 0, then cudaGetLastError 98, launch 0, cudaGetLastError 0" in output
    assert "nameless: launch 0, cudaGetLastError 0" in output
    assert "graphs 0 0" in output and "driver: launches 6, per-thread variants 3" in output


@pytest.mark.parametrize("name, mode", [("cuda_waits", "getproc"), ("runtime_waits", "linked")])
def test_cuda_hooks_off_leave_waits_and_launches_alone(tmp_path, name, mode):
    _, events = traced(name, mode, tmp_path, {"NVTXSHIM_HOOKS": "usb,x11"})
    assert ranges(events, "cuda") == []


def test_report_tells_waits_and_launches_apart_from_copies(tmp_path):
    """The report's gpu wait and launch columns take the ranges the library gave category wait
    and launch (the report knows them by name: an nsys export keeps no category)."""
    _, driver = traced("cuda_waits", "linked", tmp_path)
    _, runtime = traced("runtime_waits", "linked", tmp_path)
    # The two programs' calls as one process's (pid 1, the frame's): a frame counts only the calls
    # of its own process.
    calls = [dict(e, pid=1) for e in ranges(driver, "cuda")] + [
        dict(e, ts=e["ts"] + 1e6, pid=1) for e in ranges(runtime, "cuda")]
    start = min(e["ts"] for e in calls)
    end = max(end_us(e) for e in calls)
    frame = {"name": "frame 1", "cat": "nvtxshim", "ph": "X", "ts": start, "dur": end - start,
             "pid": 1, "tid": 1}
    trace = tmp_path / "both.json"
    trace.write_text(json.dumps([frame] + calls))
    report = subprocess.run([program("nvtxshim"), "report", str(trace)], capture_output=True, text=True)
    assert report.returncode == 0, report.stderr
    lines = report.stdout.splitlines()
    # no copy, no USB or X11 call: no columns of zeros for them
    start_line = lines.index("== Per frame (milliseconds; p50 and p99 by nearest rank): time in GPU waits, "
                             "kernel launches and the rest")
    assert lines[start_line + 1].split() == ["total", "gpu", "wait", "launch", "rest"]
    row = [float(v) for v in lines[start_line + 2].split()[3:]]
    ms = {category: sum(e["dur"] for e in calls if e["args"]["category"] == category) / 1000
          for category in ("wait", "launch")}
    assert abs(row[1] - ms["wait"]) < 0.002 and abs(row[2] - ms["launch"]) < 0.002, (row, ms)
    # Per name, a launch keeps its kernel's name.
    assert any(line.split()[:3] == ["cuda", "cuLaunchKernel", "nvs_stub_kernel_a"] for line in lines)
