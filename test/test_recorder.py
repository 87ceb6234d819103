"""The trace recorder as an NVTX tool: the program's own NVTX, fork, exec, _exit."""
import os


from conftest import load_trace, program, ranges, run
from traceformat import end_us


def test_records_the_programs_own_nvtx(tmp_path):
    trace = tmp_path / "t.json"
    result = run([program("test/nvtx_user")], env={"NVTXSHIM_TRACE": str(trace)})
    assert result.returncode == 0 and result.stdout == b"nvtx_user done\n" and result.stderr == b""
    events = load_trace(trace)
    by_name = {e["name"]: e for e in ranges(events)}
    outer, inner = by_name["parent outer"], by_name["inner"]
    assert outer["cat"] == "default" and outer["tid"] == inner["tid"] == outer["pid"]
    assert outer["ts"] <= inner["ts"] and end_us(inner) <= end_us(outer)
    registered = by_name['registered "quoted" step']
    assert registered["cat"] == "app" and registered["args"]["payload"] == 4096
    assert "crosses threads" in by_name
    # app's range was popped while default's, pushed after it, was open: as a complete event it
    # would cross that one (load_trace checks that none does), so it is an async pair.
    app, default = by_name["app interleaved"], by_name["default interleaved"]
    assert app.get("async") and app["cat"] == "app" and not default.get("async")
    assert app["ts"] < default["ts"] < end_us(app) < end_us(default)
    marks = [e for e in events if e["ph"] == "i"]
    assert [m["name"] for m in marks] == ["a mark", "wide mark", "coloured mark"]
    assert inner["ts"] <= marks[0]["ts"] <= end_us(inner)
    assert "color" not in marks[1]["args"] and marks[2]["args"]["color"] == "#00c853"
    process = [e for e in events if e["ph"] == "M" and e["name"] == "process_name"]
    assert process and process[0]["args"]["name"] == "nvtx_user"
    # Categories named with nvtxNameCategory and nvtxDomainNameCategory, the thread named with
    # nvtxNameOsThread, the wide (W) calls in UTF-8, and each payload type as its value.
    assert by_name["categorised"]["args"]["category"] == "stage"
    assert by_name["app categorised"]["cat"] == "app"
    assert by_name["app categorised"]["args"]["category"] == "app stage"
    threads = [e["args"]["name"] for e in events
               if e["ph"] == "M" and e["name"] == "thread_name" and e["tid"] == outer["pid"]]
    assert "nvtx main" in threads, threads
    assert "wide r\u00e4nge \u20ac" in by_name and by_name["wide start"].get("async")
    payloads = {name: by_name[name]["args"]["payload"] for name in by_name
                if name.startswith("payload ")}
    assert payloads == {"payload int32": -5, "payload uint32": 7, "payload int64": -9,
                        "payload double": 0.25, "payload float": 1.5}


def test_fork_gives_each_process_its_own_file(tmp_path):
    result = run([program("test/nvtx_user"), "fork"],
                 env={"NVTXSHIM_TRACE": str(tmp_path / "trace-%p.json")})
    assert result.returncode == 0
    files = sorted(os.listdir(tmp_path))
    assert len(files) == 2
    outers = sorted(tuple(sorted(e["name"] for e in ranges(load_trace(tmp_path / f))
                                 if e["name"].endswith("outer"))) for f in files)
    assert outers == [("child outer",), ("parent outer",)]
    pids = {load_trace(tmp_path / f)[0]["pid"] for f in files}
    assert {"trace-%d.json" % p for p in pids} == set(files)


def test_fork_without_pid_in_the_path_keeps_the_parents_file(tmp_path):
    trace = tmp_path / "trace.json"
    result = run([program("test/nvtx_user"), "fork"], env={"NVTXSHIM_TRACE": str(trace)})
    assert result.returncode == 0
    parent = [e["name"] for e in ranges(load_trace(trace)) if e["name"].endswith("outer")]
    assert parent == ["parent outer"]
    children = [f for f in os.listdir(tmp_path) if f != "trace.json"]
    assert len(children) == 1 and children[0].startswith("trace.") and children[0].endswith(".json")


def test_exec_and__exit_leave_a_complete_trace(tmp_path):
    trace = tmp_path / "exec.json"
    result = run([program("test/nvtx_user"), "exec", "/bin/echo", "after exec"],
                 env={"NVTXSHIM_TRACE": str(trace)})
    assert result.stdout == b"nvtx_user done\nafter exec\n"
    assert "parent outer" in [e["name"] for e in ranges(load_trace(trace, complete=True))]
    trace = tmp_path / "exit.json"
    result = run([program("test/nvtx_user"), "_exit"], env={"NVTXSHIM_TRACE": str(trace)})
    assert result.returncode == 0
    assert "parent outer" in [e["name"] for e in ranges(load_trace(trace, complete=True))]


def test_a_failed_exec_resumes_the_trace(tmp_path):
    trace = tmp_path / "failed.json"
    result = run([program("test/nvtx_user"), "exec", "/nonexistent/program"],
                 env={"NVTXSHIM_TRACE": str(trace)})
    assert result.returncode == 1 and b"execv" in result.stderr
    # The exec closed the file (its `]` written); when it failed the process went on recording
    # in the same file, after the events from before it, and the file was closed again at exit:
    # one whole JSON array.
    recorded = ranges(load_trace(trace, complete=True))
    recorded_names = [e["name"] for e in recorded]
    assert "parent outer" in recorded_names
    assert recorded_names.count("after the failed exec") == 1, recorded_names
    before, after = recorded[recorded_names.index("parent outer")], recorded[-1]
    assert after["name"] == "after the failed exec" and after["ts"] >= before["ts"] + before["dur"]


def test_a_name_that_is_not_utf8_leaves_a_readable_trace(tmp_path):
    trace = tmp_path / "latin1.json"
    result = run([program("test/nvtx_user"), "latin1"], env={"NVTXSHIM_TRACE": str(trace)})
    assert result.returncode == 0 and result.stderr == b""
    recorded = [e["name"] for e in ranges(load_trace(trace, complete=True))]
    assert len(recorded) == 1 and recorded[0].startswith("caf"), recorded


def test_no_trace_when_another_nvtx_tool_is_attached(tmp_path):
    trace = tmp_path / "t.json"
    tool = tmp_path / "other-tool.so"
    tool.write_bytes(b"")
    result = run([program("test/nvtx_user")], env={"NVTXSHIM_TRACE": str(trace),
                                                   "NVTX_INJECTION64_PATH": str(tool)})
    assert result.returncode == 0 and not trace.exists()


def test_no_file_for_a_process_without_nvtx_events(tmp_path):
    trace = tmp_path / "t-%p.json"
    result = run(["/bin/sh", "-c", "echo quiet"], env={"NVTXSHIM_TRACE": str(trace)})
    assert result.stdout == b"quiet\n" and result.stderr == b""
    assert os.listdir(tmp_path) == []
