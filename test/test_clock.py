"""The recorder's clock (libnvtxshim/clock.h): CLOCK_MONOTONIC read off the TSC
where the kernel keeps its clock with it, anchored again every window. A range
the program makes between two reads of its own clock must lie between them in
the trace, in both forms, across many windows; and a thread that forbids itself
the TSC (prctl PR_SET_TSC) must neither fault nor lose its ranges."""
import pytest

from conftest import load_trace, program, ranges, run
from test_trace_pftrace import check

# The recorder's time of a range may differ from the kernel's clock by the line's error: tens
# of nanoseconds (docs/ARCHITECTURE.md, "The recorder's clock"); 200 ns is ten times that.
SLACK_NS = 200


def program_rounds(stdout):
    """{name: (before_ns, after_ns)} from clock_agree's output."""
    rounds = {}
    for line in stdout.decode().splitlines():
        label, number, before, after = line.split()
        rounds["%s %s" % (label, number)] = (int(before), int(after))
    return rounds


def json_ranges(path):
    return {e["name"]: (round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000))
            for e in ranges(load_trace(path))}


def pftrace_ranges(path):
    return {r["name"]: (r["start_ns"], r["end_ns"]) for r in check(path)["ranges"]}


def assert_between(rounds, recorded):
    assert set(rounds) <= set(recorded), sorted(set(rounds) - set(recorded))[:5]
    outside = []
    for name, (before, after) in rounds.items():
        start, end = recorded[name]
        if not before - SLACK_NS <= start <= end <= after + SLACK_NS:
            outside.append((name, start - before, after - end))
    assert outside == [], "ranges outside the program's reads (ns early, ns late): %s" % outside[:10]


@pytest.mark.parametrize("suffix,read", [(".json", json_ranges), (".pftrace", pftrace_ranges)])
def test_ranges_lie_between_the_programs_own_clock_reads(tmp_path, suffix, read):
    # 400 rounds 0.5 ms apart: a quarter of a second, the line anchored again many times as its
    # window grows from a quarter of a millisecond.
    trace = tmp_path / ("t" + suffix)
    result = run([program("test/clock_agree"), "400", "500"], env={"NVTXSHIM_TRACE": str(trace)})
    assert result.returncode == 0 and result.stderr == b"", result.stderr
    rounds = program_rounds(result.stdout)
    assert len(rounds) == 400
    assert_between(rounds, read(trace))


@pytest.mark.parametrize("suffix,read", [(".json", json_ranges), (".pftrace", pftrace_ranges)])
def test_a_thread_that_forbids_itself_the_tsc_is_recorded_without_a_fault(tmp_path, suffix, read):
    # After prctl(PR_SET_TSC, PR_TSC_SIGSEGV), an rdtsc on that thread, or on a thread it starts,
    # is SIGSEGV, and so is clock_gettime through the vDSO: the recorder reads the clock with the
    # system call there.
    trace = tmp_path / ("t" + suffix)
    result = run([program("test/clock_agree"), "20", "200", "refuse"],
                 env={"NVTXSHIM_TRACE": str(trace)})
    assert result.returncode == 0 and result.stderr == b"", (result.returncode, result.stderr)
    rounds = program_rounds(result.stdout)
    assert sorted({name.split()[0] for name in rounds}) == ["child", "late", "round"]
    assert len(rounds) == 60
    assert_between(rounds, read(trace))
