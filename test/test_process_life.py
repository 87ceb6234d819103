"""A traced program through the events of a process's life (test/programs/process_life.c) on
the emulated device: fork, exec in each of its forms, posix_spawn, vfork, threads created and
joined, dlclose and re-dlopen of libusb, and every way of ending. Each run is compared with a
run without the shim (same output, same exit code), and each process's trace file (`%p`) must
hold exactly its own calls and frames (test_recorder.py covers the same for a program that uses
NVTX itself)."""
import collections
import os
import re

import pytest

import traceformat
from conftest import PYTHON, STUB, load_trace, program, ranges, run

FRAME_ON_ACT = {"NVTXSHIM_FRAME": "call:libusb_control_transfer"}
CONTROL = re.compile(r"libusb_control_transfer type=0x40 req=0x01 val=0x([0-9a-f]{4}) OUT 0B$")


def life(make_device, tmp_path, *args, dl=False, env=None):
    """Runs process_life ARGS without and with the shim (trace.%p.json in tmp_path/traces):
    the same stdout, stderr and exit code. Returns the result and the traces directory."""
    device = make_device(frames=1)
    argv = [program("test/process_life_dl" if dl else "test/process_life")] + [str(a) for a in args]
    traces = tmp_path / "traces"
    traces.mkdir()
    plain = run(argv, env=env, shim=False, device=device)
    shimmed = run(argv, env=dict(env or {}, NVTXSHIM_TRACE=str(traces / "trace.%p.json"),
                                 **FRAME_ON_ACT), device=device)
    assert (shimmed.stdout, shimmed.stderr, shimmed.returncode) == (
        plain.stdout, plain.stderr, plain.returncode), "the shim changed what the program does"
    return plain, traces


def trace_files(traces):
    """{pid: path} for trace.PID.json files; the pid in each name is the pid of every event."""
    files = {}
    for name in sorted(os.listdir(traces)):
        match = re.fullmatch(r"(trace|next)\.(\d+)\.json", name)
        assert match, "unexpected file %s" % name
        files[(match.group(1), int(match.group(2)))] = traces / name
    return files


def load_unfinished(path):
    """A trace whose process died of a signal: every event written so far, read under the
    bare-array rule (the closing `]` may be missing and a comma left after the last event),
    its `X` events nesting on their threads; start/end pairs and frames joined into ranges,
    and those the signal left open dropped."""
    events = traceformat.read_trace(path)
    traceformat.check_nesting(events, "%s: " % path)
    events, _ = traceformat.join_async(events)
    return events


def summary(events, pid):
    """What a test asks of one process's trace."""
    assert {e["pid"] for e in events} == {pid}, "events of another process in this file"
    usb = ranges(events, "usb")
    values = [int(m.group(1), 16) for m in (CONTROL.match(e["name"]) for e in usb) if m]
    calls = collections.Counter(e["name"].split(" ")[0] for e in usb)
    frames = sorted(int(e["name"].split()[1]) for e in ranges(events, "nvtxshim")
                    if e["name"].startswith("frame "))
    names = collections.defaultdict(list)
    for e in events:
        if e["ph"] == "M" and e["name"] == "thread_name":
            names[e["tid"]].append(e["args"]["name"])
    return sorted(values), calls, frames, names


def protocol_calls(frames, status_reads=0, opened=1, closed=1):
    """The calls of FRAMES protocol frames (control, command, frame, status) and extra status
    reads, in a process that OPENED the device (libusb_open, its interface claimed) and CLOSED it
    (the interface released) that many times."""
    calls = {"libusb_control_transfer": frames, "libusb_bulk_transfer": 2 * frames,
             "libusb_interrupt_transfer": frames + status_reads, "libusb_open": opened,
             "libusb_claim_interface": opened, "libusb_release_interface": closed}
    return {name: count for name, count in calls.items() if count}


def test_fork_child_counts_its_own_frames_in_its_own_file(make_device, tmp_path):
    # The parent runs frames 0-2, forks; the child runs 3-4 and exits; the parent resumes
    # (one status read) and runs 5-6. Frame 3 of the parent is open across the fork.
    result, traces = life(make_device, tmp_path, "fork", 3, 2, 2)
    assert result.returncode == 0 and b"child exited 0" in result.stdout
    files = trace_files(traces)
    assert len(files) == 2
    (parent_key, parent_path), (child_key, child_path) = sorted(
        files.items(), key=lambda item: min(summary(load_trace(item[1]), item[0][1])[0]))
    values, calls, frames, _ = summary(load_trace(parent_path), parent_key[1])
    # Closed before the fork and opened again after it.
    assert values == [0, 1, 2, 5, 6] and calls == protocol_calls(5, status_reads=1, opened=2, closed=2)
    assert frames == [1, 2, 3, 4, 5]
    values, calls, frames, _ = summary(load_trace(child_path), child_key[1])
    assert values == [3, 4] and calls == protocol_calls(2)
    assert frames == [1, 2], "the child starts counting its own frames"


EXEC_VARIANTS = ["execv", "execvp", "execl", "execlp", "execle", "execve", "fexecve", "execveat"]


@pytest.mark.parametrize("variant", EXEC_VARIANTS)
def test_exec_completes_the_first_images_trace(make_device, tmp_path, variant):
    # Frames 0-1 with a blocked "watcher" thread holding events, then exec (libusb still open)
    # into "process_life frames 2 2", which records into next.%p.json: the same pid.
    next_trace = tmp_path / "traces" / "next.%p.json"
    result, traces = life(make_device, tmp_path, "exec", variant, 2, 2,
                          env={"LIFE_NEXT_TRACE": str(next_trace)})
    assert result.returncode == 0
    assert result.stdout.endswith(b"exec: %s\nframes: frames 2..3 errors=0 action=8\n" % variant.encode())
    files = trace_files(traces)
    assert {kind for kind, _ in files} == {"trace", "next"} and len({pid for _, pid in files}) == 1
    pid = next(iter(files))[1]
    first = load_trace(files[("trace", pid)], complete=True)  # the closing ] is there
    values, calls, frames, names = summary(first, pid)
    # The device is left open across the exec: the new image opens it again.
    assert values == [0, 1] and calls == protocol_calls(2, status_reads=3, closed=0)
    assert frames[:1] == [1]  # frame 2, open at exec: test_the_frame_open_at_the_end_ends_there
    watcher = [tid for tid, given in names.items() if "watcher" in given]
    assert len(watcher) == 1 and watcher[0] != pid
    assert sum(1 for e in ranges(first, "usb") if e["tid"] == watcher[0]) == 3
    values, calls, frames, _ = summary(load_trace(files[("next", pid)]), pid)
    assert values == [2, 3] and calls == protocol_calls(2) and frames == [1, 2]


def test_posix_spawn_child_writes_its_own_file_and_the_parent_goes_on(make_device, tmp_path):
    result, traces = life(make_device, tmp_path, "spawn", 2, 2, 2)
    assert result.returncode == 0 and b"spawned exited 0" in result.stdout
    files = trace_files(traces)
    assert len(files) == 2
    seen = sorted(summary(load_trace(path), pid)[:3] for (_, pid), path in files.items())
    assert seen == [([0, 1, 4, 5], protocol_calls(4, status_reads=1), [1, 2, 3, 4]),
                    ([2, 3], protocol_calls(2), [1, 2])]


def test_vfork_children_leave_the_parents_trace_alone(make_device, tmp_path):
    # One vfork child fails to exec and _exits (it shares the parent's memory: the shim's
    # exec and _exit wrappers must not finish the parent's trace); one execs a recording child.
    result, traces = life(make_device, tmp_path, "vfork", 2, 2, 2)
    assert result.returncode == 0
    assert b"vfork child with a missing program exited 127\n" in result.stdout
    files = trace_files(traces)
    assert len(files) == 2
    seen = []
    for (_, pid), path in files.items():
        seen.append(summary(load_trace(path, complete=True), pid)[:3])
    assert sorted(seen) == [([0, 1, 4, 5], protocol_calls(4, status_reads=1), [1, 2, 3, 4]),
                            ([2, 3], protocol_calls(2), [1, 2])]


def test_threads_created_and_joined_while_tracing_keep_their_ranges_and_names(make_device, tmp_path):
    # 4 frames on the main thread; after each of the first 3, three named threads read the
    # status twice each and are joined (their buffers are given back and reused).
    result, traces = life(make_device, tmp_path, "threads", 4, 3, 3)
    assert result.returncode == 0 and b"threads: 3 rounds of 3, 18 status reads\n" in result.stdout
    (_, pid), path = next(iter(trace_files(traces).items()))
    events = load_trace(path)
    values, calls, frames, names = summary(events, pid)
    assert values == [0, 1, 2, 3] and frames == [1, 2, 3, 4]
    assert calls == protocol_calls(4, status_reads=18)
    workers = {}
    for tid, given in names.items():
        for name in given:
            if name.startswith("worker "):
                workers[name] = tid
    assert sorted(workers) == sorted("worker %d.%d" % (r, t) for r in range(3) for t in range(3))
    assert len(set(workers.values())) == 9 and pid not in workers.values()
    for name, tid in workers.items():
        own = [e["name"] for e in ranges(events) if e["tid"] == tid]
        assert own == ["libusb_interrupt_transfer ep=0x83 IN 8B"] * 2, name
    main = [e["name"].split(" ")[0] for e in ranges(events, "usb") if e["tid"] == pid]
    assert main[:2] == ["libusb_open", "libusb_claim_interface"]
    assert main[-1:] == ["libusb_release_interface"] and len(main) == 2 + 16 + 1


@pytest.mark.parametrize("moved", [False, True], ids=["same-place", "moved"])
def test_dlclose_and_reopen_of_libusb_keeps_calls_traced(make_device, tmp_path, moved):
    # process_life_dl reaches libusb only through dlopen+dlsym (as pyusb does): frames 0-1,
    # libusb_exit, dlclose (libusb unloads), dlopen again - with "moved", its old address
    # range is taken first so it loads elsewhere - and frames 2-3 after one status read.
    args = ["dlreopen", 2] + (["moved"] if moved else [])
    result, traces = life(make_device, tmp_path, *args, dl=True)
    assert b"dlclose unloaded libusb: yes\n" in result.stdout
    if moved:
        assert b"old address range taken: yes\nreloaded elsewhere: yes\n" in result.stdout
    assert result.returncode == 0, result.stdout
    (_, pid), path = next(iter(trace_files(traces).items()))
    values, calls, frames, _ = summary(load_trace(path), pid)
    assert values == [0, 1, 2, 3], "calls after the re-dlopen are traced"
    # Opened and closed before the dlclose, and again after the dlopen.
    assert calls == protocol_calls(4, status_reads=1, opened=2, closed=2) and frames == [1, 2, 3, 4]


EXITS = {"return": 0, "exit": 5, "thread-exit": 6, "_exit": 7, "_Exit": 8}


@pytest.mark.parametrize("how", sorted(EXITS))
def test_every_way_out_leaves_a_complete_trace(make_device, tmp_path, how):
    result, traces = life(make_device, tmp_path, "end", how, 3)
    assert result.returncode == EXITS[how]
    assert result.stdout.endswith(b"ending: %s\n" % how.encode())
    (_, pid), path = next(iter(trace_files(traces).items()))
    events = load_trace(path, complete=True)
    values, calls, frames, names = summary(events, pid)
    # No way out here closes the device first.
    assert values == [0, 1, 2] and calls == protocol_calls(3, status_reads=3, closed=0)
    assert frames[:2] == [1, 2]  # frame 3: test_the_frame_open_at_the_end_ends_there
    assert any("watcher" in given for given in names.values())


@pytest.mark.parametrize("how", ["exit", "_exit", "_Exit", "exec"])
def test_the_frame_open_at_the_end_ends_there(make_device, tmp_path, how):
    # "Frame N ... ends when the next one begins (or at exit)": exec and _exit end the
    # process image as exit does, so the last frame is in the trace too.
    args = ["exec", "execv", 3, 1] if how == "exec" else ["end", how, 3]
    env = {"LIFE_NEXT_TRACE": str(tmp_path / "traces" / "next.%p.json")}
    _, traces = life(make_device, tmp_path, *args, env=env)
    pid = next(iter(trace_files(traces)))[1]
    _, _, frames, _ = summary(load_trace(traces / ("trace.%d.json" % pid)), pid)
    assert frames == [1, 2, 3]


SIGNALS = {"abort": 6, "segv": 11, "kill": 9}


@pytest.mark.parametrize("how", sorted(SIGNALS))
def test_a_fatal_signal_leaves_every_event_so_far_readable(make_device, tmp_path, how):
    # No destructor runs and nothing can be written then: what a crash may lose is bounded by
    # the frame (docs/user-guide.md, the trace file): every event of the frames that ended before the
    # signal is in the file (each thread's buffer goes out when a frame ends), which may lack
    # its closing ] (the bare-array form allows that).
    result, traces = life(make_device, tmp_path, "end", how, 3)
    assert result.returncode == 128 + SIGNALS[how]
    assert result.stdout.endswith(b"ending: %s\n" % how.encode())
    (_, pid), path = next(iter(trace_files(traces).items()))
    values, calls, frames, names = summary(load_unfinished(path), pid)
    assert values[:2] == [0, 1], "every frame that ended before the signal"
    complete = protocol_calls(2, status_reads=3, closed=0)
    assert all(calls[name] >= count for name, count in complete.items()), calls
    assert frames[:2] == [1, 2], "every frame that ended before the signal"
    assert any("watcher" in given for given in names.values())


# A parent that records copies (the stand-in driver through ctypes), then forks two workers
# that run Python alone and end with os._exit, as multiprocessing's and PyTorch's DataLoader's do.
QUIET_WORKERS = r"""
import ctypes, multiprocessing
cuda = ctypes.CDLL("libcuda.so.1")
device, context, memory = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
cuda.cuInit(0)
cuda.cuDeviceGet(ctypes.byref(device), 0)
cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device)
cuda.cuCtxSetCurrent(context)
cuda.cuMemAlloc_v2(ctypes.byref(memory), 4096)
host = ctypes.create_string_buffer(4096)
for _ in range(3):
    cuda.cuMemcpyHtoD_v2(memory, host, 4096)
def work(queue, i):
    queue.put(i * i)
fork = multiprocessing.get_context("fork")
queue = fork.Queue()
workers = [fork.Process(target=work, args=(queue, i)) for i in range(2)]
for worker in workers:
    worker.start()
print(sorted(queue.get() for _ in workers))
for worker in workers:
    worker.join()
"""


@pytest.mark.parametrize("extension", ["json", "pftrace"])
def test_forked_workers_that_record_nothing_say_nothing_and_write_no_file(tmp_path, extension):
    """Found with PyTorch's DataLoader on a real GPU: each worker, forked after the parent had
    recorded, said at exit that it had lost an event - its thread's start, written at the fork
    with no file to go to. The start now goes in with a child's first event."""
    trace = tmp_path / ("workers." + extension)
    argv, env = [PYTHON, "-c", QUIET_WORKERS], {"LD_LIBRARY_PATH": STUB}
    plain = run(argv, env=env, shim=False)
    shimmed = run(argv, env=dict(env, NVTXSHIM_TRACE=str(trace)))
    assert plain.returncode == 0 and plain.stdout == b"[0, 1]\n", plain.stderr
    assert (shimmed.stdout, shimmed.stderr, shimmed.returncode) == (plain.stdout, plain.stderr, 0)
    assert os.listdir(tmp_path) == [trace.name]
    if extension == "json":
        assert [e["name"] for e in ranges(load_trace(trace), "cuda")] == ["cuMemcpyHtoD 4KiB pageable"] * 3
