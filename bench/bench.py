#!/usr/bin/python3
"""make bench: what tracing a call costs, and the example harness's frame rate.

Every figure in the table comes from this run. See bench/README.md
for what each row and column means. Knobs (environment):

  BENCH_QUICK=1          a fast smoke run (small counts, one harness run each)
  BENCH_N=200000         calls per repeat with no tool attached (BENCH_R_NONE=15 repeats)
  BENCH_N_TRACED=10000   calls per repeat while recording (BENCH_R=7 repeats)
  BENCH_N_NSYS=2000      calls per repeat under nsys (BENCH_R_NSYS=10 repeats)
  ns per call: median, min and max of all repeats of all processes of a row
  BENCH_HARNESS_RUNS=7   harness runs per configuration (interleaved)
  BENCH_HARNESS_FRAMES=600
  BENCH_CONVERT_RUNS=5   runs of each converter on each export (interleaved)
  BENCH_CONVERT_CALLS=50000  libusb_submit_transfer calls in the large export (3 ranges each)
  BENCH_SKIP=            comma list of parts to leave out: calls,callgrind,nsys,tools,harness,starts,memory,
                         convert,long
  BENCH_ONLY=            comma list of the parts to run, the others left out (BENCH_ONLY=long: the long traces)
  BENCH_LONG_SIZE=1G     the long JSON trace report reads (and the same events as .pftrace and .json.gz)
  BENCH_LONG_RUNS=3      report runs of each long trace (interleaved)
  BENCH_TOP_SIZES=200M,1G  trace sizes at which top's views are timed, the writer appending
  BENCH_TOP_RATE=1       MB a second the writer appends, BENCH_TOP_SECONDS=30 of them
  BENCH_TOP_FORMS=json   the forms top watches (json,pftrace)
  BENCH_BASELINE=        another build's libnvtxshim.so: its recording cost is measured in the
                         same run, interleaved with this build's, as the row "baseline build"
  BENCH_TIMEOUT=300      seconds one nsys run may take before it is ended (and retried once)
  NSYS=nsys              the nsys to use
  BENCH_STRICT=1         exit with status 1 when a target is not met (the table is printed either way)
"""
import argparse
import datetime
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import pftrace  # noqa: E402  (scripts/pftrace.py: the .pftrace reader without protobuf)

KINDS = [  # (kind, the call as the table names it, NVTX ranges one call makes)
    ("usb_sync", "libusb_bulk_transfer", 1),
    ("usb_async", "libusb_submit_transfer", 3),
    ("xflush", "XFlush", 1),
    ("cuda_htod", "cuMemcpyHtoD", 1),
    ("cuda_sync", "cuStreamSynchronize", 1),
    ("cuda_launch", "cuLaunchKernel", 1),
    ("xreply", "_XReply", 1),
    ("usb_clear_halt", "libusb_clear_halt", 1),
    # Calls on descriptors that are no device: the device-file hooks' cost to everything else.
    ("pipe_read", "read", 0),           # read(2) of a pipe, 0 bytes
    ("null_write", "write", 0),         # write(2) of a byte to /dev/null
    ("ioctl", "ioctl", 0),              # ioctl(FIONREAD) on a pipe
]
ROWS = [("plain", "plain call"), ("hand", "NVTX pair by hand"), ("shim", "shim")]
COLUMNS = [("none", "no tool"), ("null", "null NVTX tool"), ("trace", "NVTXSHIM_TRACE .json"),
           ("pftrace", "NVTXSHIM_TRACE .pftrace"), ("nsys", "nsys -t nvtx")]
INSTRUCTION_COLUMNS = ("none", "null", "trace", "pftrace")
# The recording columns: the trace file's extension picks its form.
RECORDINGS = [("trace", ".json"), ("pftrace", ".pftrace")]


def trace_ranges(path):
    """Ranges recorded in the trace file at PATH, either form: a JSON push/pop range is one
    complete event, a start/end range (the async submission) a begin and an end."""
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".pftrace"):
        # Its TrackEvents of type SLICE_BEGIN (docs/pftrace.md), read by scripts/pftrace.py.
        return sum(1 for e in pftrace.events(data) if e.type == pftrace.BEGIN)
    return data.count(b'"ph":"X"') + data.count(b'"ph":"b"')


def hooked_kinds(library):
    """The kinds whose call LIBRARY exports (cuMemcpyHtoD as cuMemcpyHtoD_v2): a baseline build
    from before a kind was hooked makes no range for it, and is measured without it."""
    text = subprocess.run(["nm", "-D", "--defined-only", library], stdout=subprocess.PIPE,
                          universal_newlines=True, check=True).stdout
    exported = {line.split()[-1].split("@")[0] for line in text.splitlines() if line.strip()}
    return [kind for kind, call, _ in KINDS if call in exported or call + "_v2" in exported]


def env_int(name, default, quick):
    value = os.environ.get(name)
    if value:
        return int(value)
    return quick if os.environ.get("BENCH_QUICK") == "1" else default


def env_text(name, default, quick):
    return os.environ.get(name) or (quick if os.environ.get("BENCH_QUICK") == "1" else default)


def size_of(text):
    """Bytes of "200M", "1G", "1.5G" or "4096"."""
    units = {"K": 1e3, "M": 1e6, "G": 1e9}
    return int(float(text[:-1]) * units[text[-1]]) if text[-1:] in units else int(text)


def env_size(name, default, quick):
    return size_of(env_text(name, default, quick))


# The parts of a run, each left out by BENCH_SKIP or run alone by BENCH_ONLY.
PARTS = ("calls", "callgrind", "nsys", "tools", "harness", "starts", "memory", "convert", "long")


class Settings:
    def __init__(self, build):
        self.build = os.path.abspath(build)
        self.quick = os.environ.get("BENCH_QUICK") == "1"
        self.n_none = env_int("BENCH_N", 200000, 50000)
        self.n_traced = env_int("BENCH_N_TRACED", 10000, 1000)
        self.repeats = env_int("BENCH_R", 7, 3)
        # Short loops, many of them: a time slice lost to a neighbour spoils one sample, not the median.
        self.repeats_none = env_int("BENCH_R_NONE", 15, 3)
        self.rounds_none = 1 if self.quick else 3      # processes per row, interleaved
        self.rounds_trace = 1 if self.quick else 2
        self.rounds_nsys = 1 if self.quick else 6
        self.n_nsys = env_int("BENCH_N_NSYS", 2000, 1000)
        self.repeats_nsys = env_int("BENCH_R_NSYS", 10, 3)
        self.n_callgrind = env_int("BENCH_N_CALLGRIND", 10000, 1000)
        self.n_callgrind_traced = env_int("BENCH_N_CALLGRIND_TRACED", 2000, 200)
        self.n_ltrace = env_int("BENCH_N_LTRACE", 300, 30)
        self.n_uftrace = env_int("BENCH_N_UFTRACE", 20000, 2000)
        self.n_bpftrace = env_int("BENCH_N_BPFTRACE", 5000, 500)
        self.n_ioctl = env_int("BENCH_N_IOCTL", 20000, 2000)
        self.harness_runs = env_int("BENCH_HARNESS_RUNS", 7, 1)
        self.n_starts = env_int("BENCH_N_STARTS", 200, 50)
        self.rounds_starts = env_int("BENCH_ROUNDS_STARTS", 9, 3)
        self.harness_frames = env_int("BENCH_HARNESS_FRAMES", 600, 100)
        self.convert_runs = env_int("BENCH_CONVERT_RUNS", 5, 1)
        self.convert_calls = env_int("BENCH_CONVERT_CALLS", 50000, 5000)
        self.ncompass = os.path.join(self.build, "bench", "ncompass", "bin", "python3")
        self.skip = set(filter(None, os.environ.get("BENCH_SKIP", "").split(",")))
        self.only = set(filter(None, os.environ.get("BENCH_ONLY", "").split(",")))
        unknown = (self.skip | self.only) - set(PARTS)
        if unknown:
            sys.exit("bench: no part %s (the parts: %s)" % (", ".join(sorted(unknown)), ",".join(PARTS)))
        if self.only:
            self.skip |= set(PARTS) - self.only
        self.longtrace = os.path.join(self.build, "test", "longtrace")
        self.long_size = env_size("BENCH_LONG_SIZE", "1G", "200M")
        self.long_runs = env_int("BENCH_LONG_RUNS", 3, 1)
        self.top_sizes = [size_of(v) for v in env_text("BENCH_TOP_SIZES", "200M,1G", "50M,200M").split(",")]
        self.top_rate = float(env_text("BENCH_TOP_RATE", "1", "1"))
        self.top_seconds = env_int("BENCH_TOP_SECONDS", 30, 10)
        self.top_forms = env_text("BENCH_TOP_FORMS", "json", "json").split(",")
        self.top_timeout = env_int("BENCH_TOP_TIMEOUT", 300, 300)
        self.timeout = env_int("BENCH_TIMEOUT", 300, 300)
        self.nsys = shutil.which(os.environ.get("NSYS", "nsys"))
        self.nvtxshim = os.path.join(self.build, "nvtxshim")
        self.shim = os.path.join(self.build, "libnvtxshim.so")
        self.baseline = os.environ.get("BENCH_BASELINE") or None
        self.baseline_kinds = hooked_kinds(self.baseline) if self.baseline else []
        self.calls = os.path.join(self.build, "bench", "calls")
        self.null_tool = os.path.join(self.build, "bench", "libnull_tool.so")
        self.write_time = os.path.join(self.build, "bench", "libwrite_time.so")
        self.starts = os.path.join(self.build, "bench", "starts")
        self.thread_memory = os.path.join(self.build, "bench", "thread_memory")
        self.memory_threads = env_int("BENCH_MEMORY_THREADS", 1000, 1000)
        self.rounds_memory = env_int("BENCH_ROUNDS_MEMORY", 3, 1)
        self.empty = os.path.join(self.build, "bench", "libempty.so")
        self.sink = os.path.join(self.build, "bench", "sink")
        self.out = os.path.join(self.build, "bench")
        self.scratch = os.path.join(self.out, "tmp")


def clean_environment():
    """The caller's tracing set-up must not leak into the measurements."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("NVTXSHIM_") and not k.startswith("NVTX_INJECTION")
           and k not in ("LD_PRELOAD", "LD_LIBRARY_PATH")}
    return env


def say(text):
    print(text, flush=True)


def append_shim_command(shim):
    """sh -c that appends the shim to whatever LD_PRELOAD it finds (nsys's, umockdev's)."""
    return ["sh", "-c", 'LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}%s" exec "$@"' % shim, "sh"]


def run(command, env, timeout=600, what=""):
    result = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            timeout=timeout)
    text = result.stdout.decode(errors="replace").replace("\r", "\n")
    if result.returncode != 0:
        raise RuntimeError("%s failed (exit %d): %s\n%s" % (what or command[0], result.returncode,
                                                            " ".join(command), text[-3000:]))
    return text


RESULT = re.compile(r"^result kind=(\w+) mode=(\w+) n=(\d+) ns=([\d.,]+)$", re.M)
# With bench/write_time.c's library loaded: the ns a call of each repeat spent inside the trace
# writer's pwrite and pwritev (the kernel taking its buffers into the file).
WRITTEN = re.compile(r"^written kind=(\w+) mode=(\w+) n=(\d+) ns=([\d.,]+)$", re.M)


def parse_results(text, pattern=RESULT):
    """{kind: [ns per call of each repeat]} from the calls program's output."""
    found = {}
    for kind, _mode, _n, values in pattern.findall(text):
        found.setdefault(kind, []).extend(float(v) for v in values.split(","))
    return found


def calls_command(s, mode, kinds, n, repeats, warm=None):
    command = [s.calls, "--mode", mode, "--kinds", ",".join(kinds), "-n", str(n), "-r", str(repeats)]
    if warm is not None:
        command += ["--warm", str(warm)]
    return command


# ---- nsys, with a watchdog -----------------------------------------------------------

def nsys_profile(s, options, report, program, env):
    """Runs PROGRAM under `nsys profile OPTIONS`; the output text. nsys runs under the command's
    watchdog (nvtxshim profile --bare): a run past BENCH_TIMEOUT (the known nsys 2022.4 hang)
    is ended with what it started and its agent, and run once more."""
    # One limit, BENCH_TIMEOUT, for the whole run (--finish-timeout 0: none for the time
    # nsys spends with no program running).
    command = [s.nvtxshim, "profile", "--bare", "--nsys", s.nsys, "--timeout", str(s.timeout),
               "--finish-timeout", "0", "-o", report, "-f", "--",
               "--sample=none", "--cpuctxsw=none", "--export", "none",
               "--force-overwrite", "true"] + options + ["--"] + program
    text = run(command, env, timeout=2 * s.timeout + 60, what="nsys profile")
    for line in text.splitlines():
        if line.startswith("nvtxshim profile: nsys did not finish within"):
            say("   " + line)
    if not os.path.exists(report + ".nsys-rep"):
        raise RuntimeError("nsys made no report: %s\n%s" % (" ".join(command), text[-3000:]))
    return text


def nsys_sqlite(s, report, env):
    run([s.nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "-o", report + ".sqlite",
         report + ".nsys-rep"], env, what="nsys export")
    return sqlite3.connect(report + ".sqlite")


def nvtx_ranges_by_domain(database):
    """{domain name: push/pop and start/end ranges} in an nsys export."""
    names = dict(database.execute(
        "SELECT domainId, text FROM NVTX_EVENTS WHERE eventType = 75"))  # NvtxDomainCreate
    counts = {}
    for domain, count in database.execute(
            "SELECT domainId, count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60) GROUP BY domainId"):
        counts[names.get(domain, "(default)")] = count
    return counts


# ---- statistics ------------------------------------------------------------------------

def summary(values):
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "samples": len(values)}


def fmt_ns(value):
    if value is None:
        return "-"
    if abs(value) >= 10000:
        return "%.0f" % value
    if abs(value) >= 100:
        return "%.0f" % value
    return "%.1f" % value


def fmt_cell(stat):
    if not stat:
        return "-"
    return "%s [%s-%s]" % (fmt_ns(stat["median"]), fmt_ns(stat["min"]), fmt_ns(stat["max"]))


# ---- the parts -----------------------------------------------------------------------------

def measure_calls(s, env, results):
    """ns per call: every row in every column."""
    if "calls" in s.skip:
        say("== per call: skipped")
        return
    kinds = [k for k, _, _ in KINDS]
    os.makedirs(s.scratch, exist_ok=True)
    samples = {}                       # (column, row, kind) -> [ns]
    written = {}                       # the same, ns inside the trace writer's writes

    def add(column, row, text):
        for kind, values in parse_results(text).items():
            samples.setdefault((column, row, kind), []).extend(values)
        for kind, values in parse_results(text, WRITTEN).items():
            written.setdefault((column, row, kind), []).extend(values)

    def expected_ranges(n, repeats, warm, measured=None):
        return sum(r for k, _, r in KINDS if measured is None or k in measured) * (warm + n * repeats)

    say("== per call, no tool attached (%d rounds x %d repeats x %d calls)"
        % (s.rounds_none, s.repeats_none, s.n_none))
    for _ in range(s.rounds_none):
        add("none", "plain", run(calls_command(s, "plain", kinds, s.n_none, s.repeats_none), env))
        add("none", "hand", run(calls_command(s, "nvtx", kinds, s.n_none, s.repeats_none), env))
        add("none", "shim", run(calls_command(s, "plain", kinds, s.n_none, s.repeats_none),
                                dict(env, LD_PRELOAD=s.shim)))

    say("== per call, a null NVTX tool attached (%d rounds x %d repeats x %d calls)"
        % (s.rounds_none, s.repeats_none, s.n_none))
    null = dict(env, NVTX_INJECTION64_PATH=s.null_tool)
    for _ in range(s.rounds_none):
        add("null", "plain", run(calls_command(s, "plain", kinds, s.n_none, s.repeats_none), null))
        add("null", "hand", run(calls_command(s, "nvtx", kinds, s.n_none, s.repeats_none), null))
        add("null", "shim", run(calls_command(s, "plain", kinds, s.n_none, s.repeats_none),
                                dict(null, LD_PRELOAD=s.shim)))

    say("== per call, NVTXSHIM_TRACE recording, .json and .pftrace interleaved "
        "(%d rounds x %d repeats x %d calls)" % (s.rounds_trace, s.repeats, s.n_traced))
    warm = min(1000, s.n_traced)
    floor = []
    for _ in range(s.rounds_trace):
        # The floor of a range (calls.c, "floor"): no call, no library, only two counter reads
        # and two 16-byte stores into a thread's buffer; in the same rounds as the recordings.
        floor += parse_results(run(calls_command(s, "plain", ["floor"], s.n_traced, s.repeats),
                                   env)).get("floor", [])
        for column, extension in RECORDINGS:
            trace = os.path.join(s.scratch, "calls-trace" + extension)
            # Every row with bench/write_time.c's library last in the preload list: the time
            # inside the trace writer's writes, the kernel's part, is measured beside the call's.
            recording = dict(env, NVTXSHIM_TRACE=trace, LD_PRELOAD=s.write_time)
            # The plain program makes no NVTX call: the recorder is never loaded.
            add(column, "plain", run(calls_command(s, "plain", kinds, s.n_traced, s.repeats),
                                     dict(recording, NVTX_INJECTION64_PATH=s.shim)))
            rows = [("hand", "nvtx", {"NVTX_INJECTION64_PATH": s.shim}, kinds),
                    ("shim", "plain", {"LD_PRELOAD": s.shim + ":" + s.write_time}, kinds)]
            if s.baseline:
                rows.append(("baseline", "plain", {"LD_PRELOAD": s.baseline + ":" + s.write_time},
                             s.baseline_kinds))
            for row, mode, extra, measured in rows:
                if os.path.exists(trace):
                    os.unlink(trace)
                add(column, row, run(calls_command(s, mode, measured, s.n_traced, s.repeats),
                                     dict(recording, **extra)))
                recorded = trace_ranges(trace)
                if row == "shim":
                    # The same workload in both forms: the sizes compare.
                    results["trace_bytes"][column] = os.path.getsize(trace)
                os.unlink(trace)
                wanted = expected_ranges(s.n_traced, s.repeats, warm, measured)
                if not wanted <= recorded <= wanted + 100:
                    raise RuntimeError("recording %s, %s row: %d ranges in the trace file, %d expected"
                                       % (extension, row, recorded, wanted))
    results["checks"].append("recording: every hand-written and shim range was in the trace file "
                             "(.json and .pftrace)")
    if floor:
        results.setdefault("floor", {})["ns"] = summary(floor)

    if "nsys" in s.skip or not s.nsys:
        say("== per call under nsys: skipped (%s)" % ("BENCH_SKIP" if s.nsys else "no nsys"))
    else:
        # One nsys session runs the three rows, interleaved, in child processes (nsys
        # follows them): rows compare under the same load and one nsys start-up is paid.
        say("== per call, under nsys profile -t nvtx (%d rounds x %d repeats x %d calls, one session)"
            % (s.rounds_nsys, s.repeats_nsys, s.n_nsys))
        reports = os.path.join(s.out, "nsys")
        os.makedirs(reports, exist_ok=True)
        report = os.path.join(reports, "calls")
        nsys_warm = min(200, s.n_nsys)
        arguments = ["--kinds", ",".join(kinds), "-n", str(s.n_nsys), "-r", str(s.repeats_nsys),
                     "--warm", str(nsys_warm)]
        # $1 the shim, $2 the program, then the program's arguments. The order of the
        # rows rotates each round: nsys's agent digests one child's events while the
        # next runs, so no row should always follow the same one.
        commands = {"plain": '"$calls" --mode plain "$@"', "hand": '"$calls" --mode nvtx "$@"',
                    "shim": 'LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$shim" "$calls" --mode plain "$@"'}
        order = [row for row, _ in ROWS]
        script = "shim=$1 calls=$2; shift 2\n"
        for round_number in range(s.rounds_nsys):
            turn = round_number % len(order)
            for row in order[turn:] + order[:turn]:
                script += 'echo "bench-row %s"; %s || exit\n' % (row, commands[row])
        text = nsys_profile(s, ["-t", "nvtx"], report,
                            ["sh", "-c", script, "sh", s.shim, s.calls] + arguments,
                            env)
        for segment in re.split(r"^bench-row ", text, flags=re.M)[1:]:
            row = segment.split(None, 1)[0]
            add("nsys", row, segment)
        counts = nvtx_ranges_by_domain(nsys_sqlite(s, report, env))
        got = counts.get("usb", 0) + counts.get("x11", 0) + counts.get("cuda", 0)
        wanted = 2 * s.rounds_nsys * expected_ranges(s.n_nsys, s.repeats_nsys, nsys_warm)
        if not wanted <= got <= wanted + 100 * s.rounds_nsys:
            raise RuntimeError("nsys: %d ranges in the report, %d expected (%s)" % (got, wanted, counts))
        results["checks"].append("nsys: every hand-written and shim range was in the report")

    for (column, row, kind), values in samples.items():
        results["ns"].setdefault(column, {}).setdefault(row, {})[kind] = summary(values)
    for (column, row, kind), values in written.items():
        results.setdefault("written_ns", {}).setdefault(column, {}).setdefault(row, {})[kind] = \
            summary(values)


def callgrind_run(s, env, mode, kind, n, out):
    """Instructions per call in KIND's timed loop: Ir collected inside bench_KIND_MODE / N.
    (One run per kind: callgrind's --dump-after parts misattribute costs after the first.)"""
    suffix = "nvtx" if mode == "nvtx" else "plain"
    run(["valgrind", "--tool=callgrind", "--toggle-collect=bench_%s_%s" % (kind, suffix),
         "--callgrind-out-file=" + out] + calls_command(s, mode, [kind], n, 1), env, what="valgrind")
    with open(out) as f:
        for line in f:
            if line.startswith("totals:"):
                return int(line.split()[1]) / n
    raise RuntimeError("no totals in " + out)


def measure_instructions(s, env, results):
    if "callgrind" in s.skip or not shutil.which("valgrind"):
        say("== instructions: skipped")
        return
    kinds = [k for k, _, _ in KINDS]
    directory = os.path.join(s.out, "callgrind")
    os.makedirs(directory, exist_ok=True)
    say("== instructions per call (valgrind --tool=callgrind, %d calls; %d while recording)"
        % (s.n_callgrind, s.n_callgrind_traced))
    results.setdefault("floor", {})["instructions"] = callgrind_run(
        s, env, "plain", "floor", s.n_callgrind, os.path.join(directory, "floor.out"))
    for column, n, extra in (("none", s.n_callgrind, {}),
                             ("null", s.n_callgrind, {"NVTX_INJECTION64_PATH": s.null_tool}),
                             ("trace", s.n_callgrind_traced,
                              {"NVTXSHIM_TRACE": os.path.join(s.scratch, "callgrind-trace.json")}),
                             ("pftrace", s.n_callgrind_traced,
                              {"NVTXSHIM_TRACE": os.path.join(s.scratch, "callgrind-trace.pftrace")})):
        trace = extra.get("NVTXSHIM_TRACE", "")
        rows = [("plain", "plain", {}),
                ("hand", "nvtx", {"NVTX_INJECTION64_PATH": s.shim} if "NVTXSHIM_TRACE" in extra else {}),
                ("shim", "plain", {"LD_PRELOAD": s.shim})]
        if s.baseline and column in ("trace", "pftrace"):
            rows.append(("baseline", "plain", {"LD_PRELOAD": s.baseline}))
        for row, mode, row_env in rows:
            for kind in (s.baseline_kinds if row == "baseline" else kinds):
                out = os.path.join(directory, "%s-%s-%s.out" % (column, row, kind))
                per_call = callgrind_run(s, dict(env, **extra, **row_env), mode, kind, n, out)
                results["instructions"].setdefault(column, {}).setdefault(row, {})[kind] = per_call
                results["callgrind_files"].setdefault(column, {}).setdefault(row, {})[kind] = out
                if os.path.exists(trace):
                    os.unlink(trace)


def top_functions(path, n_calls, limit=10):
    """callgrind_annotate's self cost per function, per call."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=no", "--auto=no", path], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL).stdout.decode(errors="replace")
    rows = []
    for line in text.splitlines():
        match = re.match(r"^\s*([\d,]+)\s+\([\s\d.]+%\)\s+(\S.*)$", line)
        if match and "PROGRAM TOTALS" not in line:
            rows.append((int(match.group(1).replace(",", "")) / n_calls, match.group(2)))
    return rows[:limit]


def measure_tools(s, env, results):
    """The same call (libusb_bulk_transfer on the sink) under the usual tracers."""
    if "tools" in s.skip:
        say("== other tracers: skipped")
        return
    tools = results["tools"]
    sink_usb = os.path.join(s.sink, "libusb-1.0.so.0")
    warm = 100
    say("== the same call under other tracers")

    def record(name, text, n, verified, note=""):
        values = parse_results(text).get("usb_sync") or parse_results(text).get("ioctl")
        tools[name] = {"ns": summary(values), "calls": n, "verified": verified, "note": note}

    total = lambda n: warm + n * s.repeats

    def guarded(name, measure):
        """A tracer that fails (no permission, a kernel without uprobes) gets a row saying so."""
        try:
            measure()
        except (RuntimeError, subprocess.TimeoutExpired, OSError, sqlite3.Error) as error:
            tools[name] = {"failed": str(error).splitlines()[0][:150]}
            say("   %s failed: %s" % (name, tools[name]["failed"]))

    def ltrace():
        log = os.path.join(s.scratch, "ltrace.txt")
        n = s.n_ltrace
        text = run(["ltrace", "-o", log, "-e", "libusb_bulk_transfer"] +
                   calls_command(s, "plain", ["usb_sync"], n, s.repeats, warm), env, what="ltrace")
        with open(log) as f:
            seen = sum(1 for line in f if "libusb_bulk_transfer(" in line)
        os.unlink(log)
        if seen != total(n):
            raise RuntimeError("ltrace saw %d calls, %d made" % (seen, total(n)))
        record("ltrace -e libusb_bulk_transfer", text, n, "%d calls logged" % seen)

    def uftrace():
        data = os.path.join(s.scratch, "uftrace.data")
        shutil.rmtree(data, ignore_errors=True)
        n = s.n_uftrace
        # --force: the program is not built with -pg; uftrace then traces its library calls (PLT).
        text = run(["uftrace", "record", "--force", "-d", data] +
                   calls_command(s, "plain", ["usb_sync"], n, s.repeats, warm), env, what="uftrace")
        report = run(["uftrace", "report", "-d", data], env, what="uftrace report")
        shutil.rmtree(data, ignore_errors=True)
        seen = 0
        for line in report.splitlines():
            fields = line.split()
            if fields and fields[-1] == "libusb_bulk_transfer":
                seen = int(fields[-2])
        if seen != total(n):
            raise RuntimeError("uftrace recorded %d calls, %d made" % (seen, total(n)))
        record("uftrace record --force (library calls)", text, n, "%d calls recorded" % seen)

    def bpftrace():
        n = s.n_bpftrace
        program = ("uprobe:%s:libusb_bulk_transfer { @calls = count(); } "
                   "uretprobe:%s:libusb_bulk_transfer { @returns = count(); }" % (sink_usb, sink_usb))
        text = run(["bpftrace", "-e", program, "-c",
                    " ".join(calls_command(s, "plain", ["usb_sync"], n, s.repeats, warm))],
                   env, what="bpftrace")
        counts = dict(re.findall(r"^@(calls|returns): (\d+)$", text, re.M))
        if int(counts.get("calls", 0)) != total(n) or int(counts.get("returns", 0)) != total(n):
            raise RuntimeError("bpftrace counted %s for %d calls" % (counts, total(n)))
        record("bpftrace uprobe+uretprobe", text, n,
               "%s entries, %s returns counted" % (counts["calls"], counts["returns"]))

    for name, tool, measure in (("ltrace -e libusb_bulk_transfer", "ltrace", ltrace),
                                ("uftrace record --force (library calls)", "uftrace", uftrace),
                                ("bpftrace uprobe+uretprobe", "bpftrace", bpftrace)):
        if not shutil.which(tool):
            tools[name] = {"missing": True}
        elif tool == "bpftrace" and os.geteuid() != 0:
            tools[name] = {"missing": True, "note": "needs root"}
        else:
            guarded(name, measure)

    # nsys's OS runtime tracing, on a cheap system call.
    n = s.n_ioctl
    text = run(calls_command(s, "plain", ["ioctl"], n, s.repeats, warm), env)
    record("ioctl(FIONREAD), no tool", text, n, "")

    def osrt():
        reports = os.path.join(s.out, "nsys")
        os.makedirs(reports, exist_ok=True)
        for name, options, note in (
                ("nsys -t osrt, ioctl", [], "default --osrt-threshold (1 us): shorter calls timed, not kept"),
                ("nsys -t osrt --osrt-threshold=1, ioctl", ["--osrt-threshold=1"], "every call kept")):
            report = os.path.join(reports, "osrt-" + ("all" if options else "default"))
            text = nsys_profile(s, ["-t", "osrt"] + options, report,
                                calls_command(s, "plain", ["ioctl"], n, s.repeats, warm), env)
            database = nsys_sqlite(s, report, env)
            kept = database.execute("SELECT count(*) FROM OSRT_API o JOIN StringIds s ON s.id = o.nameId "
                                    "WHERE s.value = 'ioctl'").fetchone()[0]
            if options and kept < total(n):
                raise RuntimeError("nsys -t osrt kept %d of %d ioctl calls" % (kept, total(n)))
            record(name, text, n, "%d ioctl calls in the report" % kept, note)

    if s.nsys and "nsys" not in s.skip:
        guarded("nsys -t osrt, ioctl", osrt)


def measure_starts(s, env, results):
    """A process that uses no hooked library: /bin/true started N times with no preload,
    with an empty preload library and with the shim, the three interleaved round by round."""
    if "starts" in s.skip:
        say("== start-up: skipped")
        return
    rows = [("none", "no preload", "-"), ("empty", "empty preload library", s.empty),
            ("shim", "the shim", s.shim)]
    say("== start-up: /bin/true started %d times a sample, %d rounds, interleaved"
        % (s.n_starts, s.rounds_starts))
    samples = {name: [] for name, _, _ in rows}
    for round_number in range(s.rounds_starts):
        turn = round_number % len(rows)
        for name, _, library in rows[turn:] + rows[:turn]:
            text = run([s.starts, str(s.n_starts), library, "/bin/true"], env, what="starts")
            samples[name].append(float(re.search(r"ns=([\d.]+)", text).group(1)))
    for name, label, _ in rows:
        entry = {"label": label, "ns": summary(samples[name]), "samples": samples[name]}
        if name != "none":
            # Each sample against the empty library's in the same round.
            entry["over_empty"] = summary([a / b for a, b in zip(samples[name], samples["empty"])])
        results["starts"][name] = entry


def measure_memory(s, env, results):
    """What N live threads that each recorded one range cost in resident memory
    (bench/thread_memory.c): the growth from before the threads to all of them alive, without
    the library, with it and nothing set, and recording each form; the rows interleaved."""
    if "memory" in s.skip:
        say("== memory: skipped")
        return
    os.makedirs(s.scratch, exist_ok=True)
    rows = [("none", "no library", None, None), ("shim", "the shim, nothing set", s.shim, None),
            ("json", "recording .json", s.shim, "memory.json"),
            ("pftrace", "recording .pftrace", s.shim, "memory.pftrace")]
    say("== memory: %d live threads that each recorded one range, %d rounds"
        % (s.memory_threads, s.rounds_memory))
    samples = {name: [] for name, _, _, _ in rows}
    for _ in range(s.rounds_memory):
        for name, _, library, trace in rows:
            row_env = dict(env)
            command = [s.thread_memory, str(s.memory_threads)]
            if library:
                command = append_shim_command(library) + command
            if trace:
                row_env["NVTXSHIM_TRACE"] = os.path.join(s.scratch, trace)
            text = run(command, row_env, what="thread_memory")
            found = re.search(r"rss_before_kib=(\d+) rss_live_kib=(\d+)", text)
            samples[name].append(int(found.group(2)) - int(found.group(1)))
    for name, label, _, _ in rows:
        entry = {"label": label, "kib": summary(samples[name]), "samples": samples[name]}
        if name != "none":
            entry["over_none_kib"] = summary([a - b for a, b in zip(samples[name], samples["none"])])
        results["memory"][name] = entry


def measure_harness(s, env, results):
    if "harness" in s.skip:
        say("== harness: skipped")
        return
    harness = os.path.join(s.build, "harness_physical")
    emucam = os.path.join(s.build, "emucam")
    size = ["--width", "320", "--height", "240"]
    program = [harness] + size + ["--frames", str(s.harness_frames), "--fps", "0", "--use_gui=0",
                                  "--inference=cpu", "--async"]
    device = [emucam] + size + ["--"]
    shim_env = dict(env, NVTXSHIM_FRAME="call:libusb_control_transfer")
    trace = os.path.join(s.scratch, "harness-trace.json")
    configurations = [
        ("none", "no tracing", lambda: run(device + program, env, what="harness")),
        ("shim", "shim, no tool", lambda: run(device + append_shim_command(s.shim) + program,
                                              shim_env, what="harness")),
        ("shim_trace", "shim, NVTXSHIM_TRACE", lambda: run(device + append_shim_command(s.shim) + program,
                                                           dict(shim_env, NVTXSHIM_TRACE=trace),
                                                           what="harness")),
    ]
    if s.nsys and "nsys" not in s.skip:
        report = os.path.join(s.out, "nsys", "harness")
        os.makedirs(os.path.dirname(report), exist_ok=True)
        configurations.append(
            ("shim_nsys", "shim under nsys -t nvtx",
             lambda: nsys_profile(s, ["-t", "nvtx"], report,
                                  device + append_shim_command(s.shim) + program, shim_env)))
    say("== harness: %d frames of 320x240, --async --fps 0 --inference=cpu, no GUI; %d runs each, interleaved"
        % (s.harness_frames, s.harness_runs))
    fps = {name: [] for name, _, _ in configurations}
    summaries = {}
    for _ in range(s.harness_runs):
        for name, _, start in configurations:
            text = start()
            match = re.search(r"^fps=([\d.]+)$", text, re.M)
            second = re.search(r"^frames=.*$", text, re.M)
            if not match or not second:
                raise RuntimeError("harness (%s) printed no summary:\n%s" % (name, text[-2000:]))
            fps[name].append(float(match.group(1)))
            summaries.setdefault(second.group(0), []).append(name)
            if os.path.exists(trace):
                os.unlink(trace)
    if len(summaries) != 1:
        raise RuntimeError("the harness's summary differs between configurations: %s" % summaries)
    if "shim_nsys" in fps:
        counts = nvtx_ranges_by_domain(nsys_sqlite(s, report, env))
        if counts.get("usb", 0) < s.harness_frames:
            raise RuntimeError("harness under nsys: only %s NVTX ranges in the report" % counts)
        results["checks"].append("harness under nsys: %d usb ranges in the last run's report"
                                 % counts["usb"])
    results["checks"].append("harness: the same summary line (frames, checksum, actions) in every run")
    for name, label, _ in configurations:
        entry = {"label": label, "fps": summary(fps[name]), "runs": fps[name]}
        if name != "none":
            # Each run against the untraced run just before it: slow drifts of the
            # machine's load cancel out.
            entry["ratio"] = summary([a / b for a, b in zip(fps[name], fps["none"])])
            # The least disturbed run of each: on a shared machine, the best case is the steadiest.
            entry["best_ratio"] = max(fps[name]) / max(fps["none"])
        results["harness"][name] = entry


# ---- nvtxshim convert against the nCompass converter -----------------------------------

def ncompass_converter(s):
    """The nCompass SDK's converter (`ncompass` from PyPI, which bench/deps.sh installs in
    build/bench/ncompass): its Rust binary, nsys-chrome, the one `ncompass convert` runs."""
    if not os.path.exists(s.ncompass):
        return None
    text = subprocess.run([s.ncompass, "-c", "import ncompass, os; print(os.path.dirname(ncompass.__file__))"],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True).stdout
    binary = os.path.join(text.strip(), "bin", "nsys-chrome")
    return binary if text.strip() and os.access(binary, os.X_OK) else None


def trace_counts(path):
    """(events that are not metadata, NVTX-domain ranges and marks) in a Chrome trace, plain or
    gzipped, array or object form."""
    import gzip
    with open(path, "rb") as f:
        gzipped = f.read(2) == b"\x1f\x8b"
    with (gzip.open if gzipped else open)(path, "rt", encoding="utf-8") as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    timed = [e for e in events if e.get("ph") != "M"]
    return len(timed)


def measure_convert(s, env, results):
    """nvtxshim convert and nCompass's nsys-chrome on the same SQLite exports, interleaved:
    a 150-frame harness run under nsys -t nvtx,osrt with a 3 ms budget, and a large one
    (the calls program's asynchronous transfers: three ranges a call)."""
    if "convert" in s.skip or "nsys" in s.skip or not s.nsys:
        say("== convert against nCompass: skipped (%s)" % ("BENCH_SKIP" if s.nsys else "no nsys"))
        return
    converter = ncompass_converter(s)
    reports = os.path.join(s.out, "nsys")
    os.makedirs(reports, exist_ok=True)
    harness = os.path.join(s.build, "harness_physical")
    emucam = os.path.join(s.build, "emucam")
    frames = 150
    exports = [
        ("harness", "harness, %d frames, nsys -t nvtx,osrt" % frames, ["-t", "nvtx,osrt"],
         [emucam, "--"] + append_shim_command(s.shim) +
         [harness, "--frames", str(frames), "--fps", "0", "--use_gui=0", "--inference=cpu", "--async"],
         dict(env, NVTXSHIM_FRAME="call:libusb_control_transfer", NVTXSHIM_FRAME_BUDGET="3ms")),
        ("large", "%d async transfers (3 ranges each), nsys -t nvtx" % s.convert_calls, ["-t", "nvtx"],
         append_shim_command(s.shim) + calls_command(s, "plain", ["usb_async"], s.convert_calls, 1, 0),
         env),
    ]
    say("== convert: nvtxshim convert and nCompass's nsys-chrome on the same exports, %d runs each, interleaved"
        % s.convert_runs)
    out = os.path.join(s.scratch, "convert")
    os.makedirs(out, exist_ok=True)
    for name, label, options, program, program_env in exports:
        report = os.path.join(reports, "convert-" + name)
        nsys_profile(s, options, report, program, program_env)
        database = nsys_sqlite(s, report, env)
        ranges = database.execute("SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (34, 59, 60)").fetchone()[0]
        database.close()
        sqlite_path = report + ".sqlite"
        # nsys-chrome writes gzipped JSON whatever the name: it is compared with nvtxshim's
        # .json.gz; nvtxshim's plain .json row shows what the compression costs.
        help_text = run([s.nvtxshim, "convert", "--help"], env)
        rows = [("nvtxshim convert -> .json", [s.nvtxshim, "convert", sqlite_path], ".json")]
        if ".json.gz" in help_text:
            rows.append(("nvtxshim convert -> .json.gz", [s.nvtxshim, "convert", sqlite_path], ".json.gz"))
        if converter:
            rows.append(("nCompass nsys-chrome (gzipped)", [converter, sqlite_path, "-o"], ".json.gz"))
        entry = {"label": label, "nvtx": ranges, "rows": {}}
        times = {row: [] for row, _, _ in rows}
        targets_of = {row: os.path.join(out, "%s-%d%s" % (name, i, suffix)) for i, (row, _, suffix) in enumerate(rows)}
        for round_number in range(s.convert_runs):
            turn = round_number % len(rows)
            for row, command, _ in rows[turn:] + rows[:turn]:
                if os.path.exists(targets_of[row]):
                    os.unlink(targets_of[row])
                started = time.monotonic()
                run(command + [targets_of[row]], env, what=row)
                times[row].append(time.monotonic() - started)
        for row, _, _ in rows:
            entry["rows"][row] = {"s": summary(times[row]), "bytes": os.path.getsize(targets_of[row]),
                                  "events": trace_counts(targets_of[row])}
        results["convert"][name] = entry
    if not converter:
        results["convert"]["missing"] = "nCompass not installed (bench/deps.sh: python3 -m venv, pip install ncompass)"
    shutil.rmtree(out, ignore_errors=True)


# ---- long traces: report's memory and time, top's views ------------------------------------

# The inputs report reads: the long JSON trace, the same events as .pftrace, and the JSON gzipped.
LONG_INPUTS = [("json", ".json"), ("pftrace", ".pftrace"), ("json.gz", ".json.gz")]


def measured(command, env, stdout, timeout):
    """COMMAND run alone, its output to the file STDOUT: {peak bytes, cpu s, wall s}, from its
    own rusage (wait4), or RuntimeError when it fails."""
    with open(stdout, "wb") as out:
        started = time.monotonic()
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.PIPE)
        timer = threading.Timer(timeout, process.kill)
        timer.start()
        errors = process.stderr.read()
        _, status, usage = os.wait4(process.pid, 0)
        timer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError("%s exited %d: %s" % (" ".join(command), process.returncode,
                                                 errors.decode(errors="replace")[-2000:]))
    return {"peak": usage.ru_maxrss * 1024, "cpu": usage.ru_utime + usage.ru_stime,
            "wall": time.monotonic() - started}


def long_trace(s, env, form, path, *options):
    """test/programs/longtrace's trace in FORM at PATH (the default shape: three calls a frame,
    eight idle event-handling ranges): its expected figures (the frame count among them)."""
    expect = path + ".expected.json"
    run([s.longtrace, "--form", form, "--seed", "1", "--expect", expect, "-o", path] + list(options),
        env, what="longtrace")
    with open(expect) as f:
        figures = json.load(f)
    os.unlink(expect)
    return figures


def measure_long_report(s, env, results, folder):
    """nvtxshim report of a BENCH_LONG_SIZE JSON trace, of the same events as .pftrace and of
    the JSON gzipped: peak resident memory, CPU and wall seconds; with BENCH_BASELINE, the other
    build's nvtxshim on the same files, interleaved."""
    base = os.path.join(folder, "long")
    expected = long_trace(s, env, "json", base + ".json", "--size", str(s.long_size))
    long_trace(s, env, "pftrace", base + ".pftrace", "--frames", str(expected["frames"]))
    with open(base + ".json", "rb") as plain, open(base + ".json.gz", "wb") as packed:
        subprocess.run(["gzip", "-1", "-c"], stdin=plain, stdout=packed, check=True)
    commands = [("this", s.nvtxshim)]
    baseline = s.baseline and os.path.join(os.path.dirname(os.path.abspath(s.baseline)), "nvtxshim")
    if baseline and os.path.exists(baseline):
        commands.append(("baseline", baseline))
    frames = expected["frames"]
    say("== long traces: nvtxshim report of %.0f MB of JSON (%d frames), the same events as .pftrace "
        "and as .json.gz, %d runs each, interleaved" % (os.path.getsize(base + ".json") / 1e6, frames,
                                                          s.long_runs))
    samples = {}
    rows = [(name, build, command) for name, _ in LONG_INPUTS for build, command in commands]
    for round_number in range(s.long_runs):
        turn = round_number % len(rows)
        for name, build, command in rows[turn:] + rows[:turn]:
            text = os.path.join(folder, "report.txt")
            figures = measured([command, "report", base + "." + name], env, text, s.timeout)
            with open(text) as f:
                if not re.search(r"^  mean of %d " % frames, f.read(), re.M):
                    raise RuntimeError("report of %s: no 'mean of %d' frames row" % (name, frames))
            samples.setdefault((name, build), []).append(figures)
    entry = {"frames": frames, "seed": 1, "size": s.long_size, "rows": {}}
    for name, suffix in LONG_INPUTS:
        for build, _ in commands:
            runs = samples[(name, build)]
            entry["rows"]["%s %s" % (build, name)] = {
                "input": suffix, "build": build, "bytes": os.path.getsize(base + suffix),
                "peak": summary([r["peak"] for r in runs]), "cpu": summary([r["cpu"] for r in runs]),
                "wall": summary([r["wall"] for r in runs])}
    for _, suffix in LONG_INPUTS:
        os.unlink(base + suffix)
    results["long"]["report"] = entry
    check = "long traces: every report counted the %d frames written" % frames
    results["checks"].append(check)
    results["long"]["checks"].append(check)


def watch(s, env, form, size, path):
    """nvtxshim top on PATH while longtrace writes it: as fast as it goes up to SIZE bytes, then
    BENCH_TOP_RATE MB a second for BENCH_TOP_SECONDS. Of the views of the file at SIZE or more:
    the seconds from its reaching SIZE to the first (top catching up with what was written at
    once, as when it starts on a long trace), from one view to the next, and from the writer's
    end to top's last view; top's peak memory and CPU seconds."""
    if os.path.exists(path):
        os.unlink(path)
    end = size + int(s.top_rate * 1e6 * s.top_seconds)
    writer = subprocess.Popen([s.longtrace, "--form", form, "--size", str(end), "--rate", str(s.top_rate),
                               "--steady-from", str(size), "--pid", "self", "-o", path], env=env)
    top = subprocess.Popen([s.nvtxshim, "top", path], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL)
    views = []

    def read_views():
        # a view starts with "nvtxshim top: PATH, X MB read; every Y s"
        for line in top.stdout:
            found = re.match(rb"nvtxshim top: .*, ([\d.]+) MB read; every ([\d.]+) s", line)
            if found:
                views.append((time.monotonic(), float(found.group(1)) * 1e6, float(found.group(2))))

    reader = threading.Thread(target=read_views)
    reader.start()
    steady = None
    while writer.poll() is None:
        if steady is None and os.path.exists(path) and os.path.getsize(path) >= size:
            steady = time.monotonic()
        time.sleep(0.01)
    # top follows the writer's pid (--pid self): reaped now, it is gone for top's next look
    ended = time.monotonic()
    if writer.returncode != 0:
        top.kill()
        raise RuntimeError("longtrace (writing for top) exited %d" % writer.returncode)
    timer = threading.Timer(s.top_timeout, top.kill)
    timer.start()
    _, status, usage = os.wait4(top.pid, 0)
    timer.cancel()
    top.returncode = os.waitstatus_to_exitcode(status)
    reader.join()
    late = [v for v in views if v[1] >= size]
    intervals = [b[0] - a[0] for a, b in zip(late, late[1:])]
    return {"form": form, "size": size, "bytes": os.path.getsize(path), "views": len(late),
            "first_view": late[0][0] - steady if late else None, "intervals": summary(intervals),
            "last_after_end": late[-1][0] - ended if late else None,
            "ended_by_bench": top.returncode != 0, "interval_setting": late[-1][2] if late else None,
            "peak": usage.ru_maxrss * 1024, "cpu": usage.ru_utime + usage.ru_stime,
            # each view of the file at SIZE or more: seconds from its reaching SIZE, bytes read
            "view_times": [[round(v[0] - steady, 3), v[1]] for v in late]}


def measure_long(s, env, results):
    if "long" in s.skip:
        say("== long traces: skipped")
        return
    if not os.path.exists(s.longtrace):
        raise RuntimeError("%s is missing: make bench builds it" % s.longtrace)
    folder = os.path.join(s.scratch, "long")
    os.makedirs(folder, exist_ok=True)
    started = time.monotonic()
    results["long"] = {"meta": dict(results["meta"]), "top": {}, "checks": []}
    measure_long_report(s, env, results, folder)
    say("== long traces: nvtxshim top while a trace grows at %g MB/s for %d s from %s"
        % (s.top_rate, s.top_seconds, " and ".join("%.0f MB" % (size / 1e6) for size in s.top_sizes)))
    for form in s.top_forms:
        for size in s.top_sizes:
            path = os.path.join(folder, "top." + form)
            results["long"]["top"]["%s %d" % (form, size)] = watch(s, env, form, size, path)
            os.unlink(path)
    shutil.rmtree(folder, ignore_errors=True)
    results["long"]["settings"] = {"top_rate_mb": s.top_rate, "top_seconds": s.top_seconds,
                                   "long_runs": s.long_runs}
    results["long"]["meta"]["seconds"] = round(time.monotonic() - started, 1)


# ---- the table ------------------------------------------------------------------------------

# Issue 43's targets for the long traces: report in under 300 MB (a 1 GB JSON trace, the same
# events as .pftrace), and top's views within 2 s of each other at 200 MB and at 1 GB.
LONG_PEAK_LIMIT = 300e6
TOP_INTERVAL_LIMIT = 2.0


def kernel_part(results, column, kind, ranges):
    """The ns of each range the shim records in COLUMN that were spent inside the trace writer's
    writes (bench/write_time.c): the kernel taking the buffers into the file. None when the run
    did not measure it."""
    written = results.get("written_ns", {}).get(column, {})
    shim, plain = written.get("shim", {}).get(kind), written.get("plain", {}).get(kind)
    if shim is None or plain is None:
        return None
    return (shim["median"] - plain["median"]) / ranges


def floor_ratios(results, column, kind, ranges):
    """(ns added a range, its ratio to the floor's ns, instructions added a range) of the shim
    recording COLUMN, or Nones."""
    floor = results.get("floor", {}).get("ns")
    ns, ins = results["ns"].get(column, {}), results["instructions"].get(column, {})
    shim, plain = ns.get("shim", {}).get(kind), ns.get("plain", {}).get(kind)
    shim_ir, plain_ir = ins.get("shim", {}).get(kind), ins.get("plain", {}).get(kind)
    per_range = None if shim is None or plain is None else (shim["median"] - plain["median"]) / ranges
    ratio = None if per_range is None or not floor else per_range / floor["median"]
    ir = None if shim_ir is None or plain_ir is None else (shim_ir - plain_ir) / ranges
    return per_range, ratio, ir


def floor_targets(results):
    """The recorder against the floor of a range (bench/calls.c, "floor"): a .pftrace range
    within 1.25 x the floor's time and 150 instructions (the asynchronous call, three ranges,
    within 3 x that), JSON within 2 x .pftrace, and the shim's own work with a null tool within
    50 instructions of the hand-written pair."""
    lines = []
    if not results.get("floor", {}).get("ns"):
        return lines
    ins = results["instructions"]
    for kind, call, ranges in KINDS:
        if ranges == 0:
            continue
        per_range, ratio, ir = floor_ratios(results, "pftrace", kind, ranges)
        limit = 1.25 if ranges == 1 else 1.25 * 3 / ranges
        if ratio is not None:
            lines.append((".pftrace: a range <= %.2f x the floor" % limit, call,
                          "+%s ns a range, %.2f x" % (fmt_ns(per_range), ratio),
                          verdict(ratio <= limit, (ratio - limit) * results["floor"]["ns"]["median"], "ns")))
        ir_limit = 150 if ranges == 1 else 150 * 3 / ranges
        if ir is not None:
            lines.append((".pftrace: a range <= %.0f instructions" % ir_limit, call, "+%.0f" % ir,
                          verdict(ir <= ir_limit, ir - ir_limit, "instr")))
        json_range, _, json_ir = floor_ratios(results, "trace", kind, ranges)
        if json_range is not None and per_range is not None and per_range > 0:
            lines.append(("JSON: <= 2 x .pftrace", call,
                          "+%s vs +%s ns a range" % (fmt_ns(json_range), fmt_ns(per_range)),
                          verdict(json_range <= 2 * per_range, json_range - 2 * per_range, "ns")))
        shim, hand = ins.get("null", {}).get("shim", {}).get(kind), ins.get("null", {}).get("hand", {}).get(kind)
        if shim is not None and hand is not None:
            lines.append(("null tool: shim <= NVTX pair + 50 instructions", call,
                          "%.0f vs %.0f + 50" % (shim, hand), verdict(shim <= hand + 50, shim - hand - 50, "instr")))
    return lines


def long_targets(results):
    lines = []
    report = results.get("long", {}).get("report")
    if report:
        rows = report["rows"]
        for name, row in rows.items():
            if row["build"] != "this":
                continue
            peak = row["peak"]["max"]
            lines.append(("long trace: report's peak memory < 300 MB", "report %s %.0f MB" % (
                row["input"], row["bytes"] / 1e6), "%.0f MB" % (peak / 1e6),
                "met" if peak < LONG_PEAK_LIMIT else "NOT MET (+%.0f MB)" % ((peak - LONG_PEAK_LIMIT) / 1e6)))
            base = rows.get(name.replace("this ", "baseline ", 1))
            if base:
                cpu, before = row["cpu"]["median"], base["cpu"]["median"]
                lines.append(("long trace: report's CPU <= the baseline build's",
                              "report %s" % row["input"], "%.1f vs %.1f s" % (cpu, before),
                              "met" if cpu <= before else "NOT MET (+%.1f s)" % (cpu - before)))
    for top in sorted(results.get("long", {}).get("top", {}).values(), key=lambda t: (t["form"], t["size"])):
        worst = top["intervals"]["max"] if top["intervals"] else None
        lines.append(("top: each view within 2 s of the last", "top %s at %s" % (
            top["form"], "%g GB" % (top["size"] / 1e9) if top["size"] >= 1e9 else "%.0f MB" % (top["size"] / 1e6)),
            "-" if worst is None else "max %.1f s" % worst,
            "NOT MET (fewer than two views)" if worst is None else "met" if worst <= TOP_INTERVAL_LIMIT
            else "NOT MET (+%.1f s)" % (worst - TOP_INTERVAL_LIMIT)))
    return lines


def long_section(results):
    """The long traces' rows as text: report's memory and time, top's views."""
    out = []
    w = out.append
    report = results["long"].get("report")
    if report:
        w("long traces (test/programs/longtrace, seed 1): nvtxshim report of %d frames as JSON, the same"
          % report["frames"])
        w("events as .pftrace and the JSON gzipped; peak resident memory (its own, from wait4), CPU and")
        w("wall seconds, median [min-max] of %d interleaved runs" % results["long"]["settings"]["long_runs"])
        for name, row in report["rows"].items():
            w("  %-22s %8.1f MB   peak %s MB   CPU %s s   wall %s s" % (
                name, row["bytes"] / 1e6, spread_text(row["peak"], 1e-6, 0), spread_text(row["cpu"], 1, 2),
                spread_text(row["wall"], 1, 2)))
    if results["long"].get("top"):
        settings = results["long"]["settings"]
        w("nvtxshim top while longtrace appends %g MB a second for %d s from the size shown (written at once up"
          % (settings["top_rate_mb"], settings["top_seconds"]))
        w("to it): of the views of the file at that size or more, seconds from its reaching the size to the first,")
        w("between views (p50, max), the last view after the writer ended")
        for top in sorted(results["long"]["top"].values(), key=lambda t: (t["form"], t["size"])):
            intervals = top["intervals"]
            w("  %-8s %6.0f MB: %3d views, first %s s, between p50 %s max %s s; last %s s after the end%s; "
              "top's peak %.0f MB, CPU %.1f s" % (
                  top["form"], top["size"] / 1e6, top["views"],
                  "-" if top["first_view"] is None else "%.1f" % top["first_view"],
                  "-" if not intervals else "%.2f" % intervals["median"],
                  "-" if not intervals else "%.2f" % intervals["max"],
                  "-" if top["last_after_end"] is None else "%.1f" % top["last_after_end"],
                  " (top ended by the bench)" if top["ended_by_bench"] else "", top["peak"] / 1e6, top["cpu"]))
    return "\n".join(out)


def spread_text(stat, scale, digits):
    number = "%%.%df" % digits
    return (number + " [" + number + "-" + number + "]") % (stat["median"] * scale, stat["min"] * scale,
                                                           stat["max"] * scale)


def verdict(ok, excess, unit):
    if ok is None:
        return "not measured"
    return "met" if ok else "NOT MET (+%s %s)" % (fmt_ns(excess), unit)


def targets(results):
    ns, ins, tools, harness = results["ns"], results["instructions"], results["tools"], results["harness"]
    lines = []

    def median(column, row, kind):
        stat = ns.get(column, {}).get(row, {}).get(kind)
        return stat["median"] if stat else None

    def added(column, row, kind):
        a, b = median(column, row, kind), median(column, "plain", kind)
        return None if a is None or b is None else a - b

    def added_ir(column, row, kind):
        a = ins.get(column, {}).get(row, {}).get(kind)
        b = ins.get(column, {}).get("plain", {}).get(kind)
        return None if a is None or b is None else a - b

    tracer_added = {}
    for name, tool in tools.items():
        if tool.get("ns") and not name.startswith(("ioctl", "nsys")):
            tracer_added[name] = tool["ns"]["median"] - median("none", "plain", "usb_sync")
    cheapest = min(tracer_added.items(), key=lambda item: item[1]) if tracer_added else None

    for kind, call, ranges in KINDS:
        if ranges == 0:
            # A call on a descriptor that is no device: the shim must only look and pass it
            # on. Its time is a system call's (~300 ns), whose run-to-run spread is tens of
            # ns: the instructions are the measure; the time is shown, not judged.
            extra = added_ir("none", "shim", kind)
            if extra is not None:
                lines.append(("other descriptor: shim adds <= 10 instructions", call,
                              "+%.1f" % extra, verdict(extra <= 10, extra - 10, "instr")))
            shim, plain = median("none", "shim", kind), median("none", "plain", kind)
            if shim is not None and plain is not None:
                lines.append(("(info) other descriptor: shim minus plain", call,
                              "%+.1f ns (a system call's spread: see the rows)" % (shim - plain),
                              "-"))
            continue
        shim, hand = median("none", "shim", kind), median("none", "hand", kind)
        if shim is not None and hand is not None:
            lines.append(("no tool: shim <= NVTX pair + 2 ns", call,
                          "%s vs %s + 2" % (fmt_ns(shim), fmt_ns(hand)),
                          verdict(shim <= hand + 2, shim - hand - 2, "ns")))
        extra = added_ir("none", "shim", kind)
        if extra is not None:
            lines.append(("no tool: shim adds <= 40 instructions", call, "+%.1f" % extra,
                          verdict(extra <= 40, extra - 40, "instr")))
    for kind, call, _ in KINDS:
        extra = added("trace", "shim", kind)
        if extra is not None:
            lines.append(("recording: shim adds <= 100 ns", call, "+%s ns" % fmt_ns(extra),
                          verdict(extra <= 100, extra - 100, "ns")))
        extra_ir = added_ir("trace", "shim", kind)
        if extra_ir is not None:
            lines.append(("recording: shim adds <= 500 instructions", call, "+%.0f" % extra_ir,
                          verdict(extra_ir <= 500, extra_ir - 500, "instr")))
    extra = added("trace", "shim", "usb_sync")
    if extra is not None and cheapest:
        lines.append(("recording: cheaper than ltrace/uftrace/bpftrace", "libusb_bulk_transfer",
                      "+%s vs %s +%s ns" % (fmt_ns(extra), cheapest[0].split()[0], fmt_ns(cheapest[1])),
                      verdict(extra < cheapest[1], extra - cheapest[1], "ns")))
    # The binary form's targets (docs/user-guide.md, "The trace file"): the bulk transfer, XFlush and
    # cuMemcpyHtoD rows; uftrace's figure is its bulk transfer's, of this run.
    uftrace = tracer_added.get("uftrace record --force (library calls)")
    for kind in ("usb_sync", "xflush", "cuda_htod"):
        call = dict((k, c) for k, c, _ in KINDS)[kind]
        extra = added("pftrace", "shim", kind)
        if extra is not None:
            lines.append((".pftrace: shim adds <= 100 ns", call, "+%s ns" % fmt_ns(extra),
                          verdict(extra <= 100, extra - 100, "ns")))
            if uftrace is not None:
                lines.append((".pftrace: below uftrace's bulk transfer", call,
                              "+%s vs +%s ns" % (fmt_ns(extra), fmt_ns(uftrace)),
                              verdict(extra < uftrace, extra - uftrace, "ns")))
        extra_ir = added_ir("pftrace", "shim", kind)
        if extra_ir is not None:
            lines.append((".pftrace: shim adds <= 250 instructions", call, "+%.0f" % extra_ir,
                          verdict(extra_ir <= 250, extra_ir - 250, "instr")))
    sizes = results.get("trace_bytes", {})
    if sizes.get("trace") and sizes.get("pftrace"):
        ratio = sizes["pftrace"] / sizes["trace"]
        lines.append((".pftrace: file <= 1/4 of the .json file", "shim row, all kinds",
                      "%.1f MB vs %.1f MB (%.1f%%)" % (sizes["pftrace"] / 1e6, sizes["trace"] / 1e6,
                                                       ratio * 100),
                      "met" if ratio <= 0.25 else "NOT MET (%.1f points over)" % (ratio * 100 - 25)))
    for kind, call, _ in KINDS:
        # No target: the shim's own work once any NVTX tool is attached, which it adds
        # under nsys too (nsys's own cost per range is the same for both rows).
        shim, hand = median("null", "shim", kind), median("null", "hand", kind)
        a = ins.get("null", {}).get("shim", {}).get(kind)
        b = ins.get("null", {}).get("hand", {}).get(kind)
        if shim is not None and hand is not None:
            lines.append(("(info) null tool: shim minus NVTX pair", call,
                          "%+.1f ns, %s instr" % (shim - hand, "-" if a is None or b is None else "%+.0f" % (a - b)),
                          "-"))
    for kind, call, ranges in KINDS:
        if ranges == 0:
            continue                # no NVTX pair to compare with: nothing is traced
        shim, hand = added("nsys", "shim", kind), added("nsys", "hand", kind)
        if shim is not None and hand is not None and hand > 0:
            lines.append(("nsys: shim within 20% of NVTX pair", call,
                          "+%s vs +%s ns (%+.0f%%)" % (fmt_ns(shim), fmt_ns(hand), (shim / hand - 1) * 100),
                          verdict(shim <= 1.2 * hand, shim - 1.2 * hand, "ns")))
    if harness.get("none") and harness.get("shim"):
        ratio = harness["shim"]["ratio"]["median"]
        lines.append(("harness: shim, no tool >= 98% of untraced fps", "harness_physical",
                      "%.1f%% (paired runs)" % (ratio * 100),
                      "met" if ratio >= 0.98 else "NOT MET (%.1f points short)" % ((0.98 - ratio) * 100)))
    for kind, call, _ in KINDS:
        shim, base = added("trace", "shim", kind), added("trace", "baseline", kind)
        if shim is not None and base is not None:
            lines.append(("recording: no more than the baseline build", call,
                          "+%s vs +%s ns" % (fmt_ns(shim), fmt_ns(base)),
                          verdict(shim <= base, shim - base, "ns")))
        shim_ir, base_ir = added_ir("trace", "shim", kind), added_ir("trace", "baseline", kind)
        if shim_ir is not None and base_ir is not None:
            lines.append(("recording: instructions <= the baseline build", call,
                          "+%.0f vs +%.0f" % (shim_ir, base_ir),
                          verdict(shim_ir <= base_ir, shim_ir - base_ir, "instr")))
    lines += floor_targets(results)
    lines += long_targets(results)
    starts = results.get("starts", {})
    if starts.get("shim") and starts.get("empty"):
        ratio = starts["shim"]["over_empty"]["median"]
        lines.append(("start-up: shim within 10% of an empty preload", "/bin/true",
                      "%.1f%% (paired rounds)" % (ratio * 100),
                      "met" if ratio <= 1.10 else "NOT MET (%.1f points over)" % ((ratio - 1.10) * 100)))
    return lines


def table(results, s):
    out = []
    w = out.append
    meta = results["meta"]
    w("libnvtxshim bench  %s  %s  (%s)" % (meta["date"], meta["host"], meta["cpu"]))
    if results["ns"]:
        per_call_table(results, s, w)
    tail_sections(results, s, w)
    return "\n".join(out)


def per_call_table(results, s, w):
    w("every figure below was measured in this run; ns per call: median [min-max] over all repeats;")
    w("instructions per call: callgrind Ir in the timed loop / calls; '+' figures are added over the plain call")
    w("in the same column. The real calls are sink libraries that return at once; the null NVTX tool takes every")
    w("NVTX call and drops it (the cost of making the calls, and of the shim's own work around them).")
    w("calls x repeats per process: no tool and null tool %d x %d (%d processes a row), recording %d x %d (%d), nsys %d x %d (%d);"
      % (s.n_none, s.repeats_none, s.rounds_none, s.n_traced, s.repeats, s.rounds_trace, s.n_nsys, s.repeats_nsys,
         s.rounds_nsys))
    w("callgrind: %d calls (%d while recording), after %d warm-up calls outside the counted loop."
      % (s.n_callgrind, s.n_callgrind_traced, 1000))
    w("")
    head = "%-28s %-18s" % ("call", "row") + "".join(" %-19s" % label for _, label in COLUMNS)
    head += " | instructions per call"
    w(head)
    w("%-28s %-18s" % ("", "") + " %-19s" % "ns [min-max]" * len(COLUMNS) + " | " +
      " ".join("%9s" % dict(COLUMNS)[c][:9] for c in INSTRUCTION_COLUMNS))
    w("-" * (len(head) + 10))
    rows = ROWS + ([("baseline", "baseline build")] if s.baseline else [])
    for kind, call, ranges in KINDS:
        for index, (row, label) in enumerate(rows):
            cells = [fmt_cell(results["ns"].get(c, {}).get(row, {}).get(kind)) for c, _ in COLUMNS]
            ir = [results["instructions"].get(c, {}).get(row, {}).get(kind) for c in INSTRUCTION_COLUMNS]
            name = call if index == 0 else (
                "  + handle_events + callback" if index == 1 and ranges > 1 else
                "  (%d NVTX ranges a call)" % ranges if index == 2 and ranges > 1 else "")
            w("%-28s %-18s" % (name, label) + "".join(" %-19s" % c for c in cells) + " | " +
              " ".join("%9s" % ("-" if v is None else "%.0f" % v) for v in ir))
    w("")
    floor = results.get("floor", {})
    if floor.get("ns"):
        w("the floor of a range (two time-stamp counter reads, two 16-byte stores into the thread's buffer, no")
        w("call): %s ns, %s instructions; the shim's recording over its plain call, a range, and as a ratio to it;"
          % (fmt_cell(floor["ns"]), "-" if floor.get("instructions") is None else "%.0f" % floor["instructions"]))
        w("writing: of those ns, the time inside the trace writer's pwrite/pwritev (the kernel taking its buffers)")
        for kind, call, ranges in KINDS:
            if ranges == 0:
                continue
            cells = []
            for column, extension in RECORDINGS:
                per_range, ratio, ir = floor_ratios(results, column, kind, ranges)
                kernel = kernel_part(results, column, kind, ranges)
                cells.append("%s %s ns (%s x%s), %s instr" % (
                    extension, "-" if per_range is None else "+" + fmt_ns(per_range),
                    "-" if ratio is None else "%.2f" % ratio,
                    "" if kernel is None else "; writing %s" % fmt_ns(kernel),
                    "-" if ir is None else "%.0f" % ir))
            w("  %-28s %s" % (call, "; ".join(cells)))
        w("")


def tail_sections(results, s, w):
    if results["tools"]:
        w("the same call under other tracers (libusb_bulk_transfer on the sink; ioctl for nsys -t osrt)")
        plain_sync = results["ns"].get("none", {}).get("plain", {}).get("usb_sync")
        plain_ioctl = results["tools"].get("ioctl(FIONREAD), no tool", {}).get("ns")
        w("%-42s %-26s %12s  %s" % ("tracer", "ns [min-max]", "added ns", "check"))
        w("-" * 110)
        for name, tool in results["tools"].items():
            if tool.get("missing"):
                w("%-42s %s" % (name, "not installed" + (" (%s)" % tool["note"] if tool.get("note") else "")))
                continue
            if tool.get("failed"):
                w("%-42s %s" % (name, "failed: " + tool["failed"]))
                continue
            base = plain_ioctl if "ioctl" in name else plain_sync
            extra = (tool["ns"]["median"] - base["median"]) if base and "no tool" not in name else None
            w("%-42s %-26s %12s  %s%s" % (name, fmt_cell(tool["ns"]),
                                          "-" if extra is None else "+" + fmt_ns(extra),
                                          tool["verified"],
                                          ("; " + tool["note"]) if tool.get("note") else ""))
        w("")
    if results["harness"]:
        w("example harness on the emulated camera: fps, median [min-max] of %d interleaved runs; ratio: each"
          % s.harness_runs)
        w("run over the untraced run just before it, median [min-max]")
        for name, entry in results["harness"].items():
            ratio = entry.get("ratio")
            w("  %-26s %-24s %s" % (entry["label"], fmt_cell(entry["fps"]),
                                    "" if not ratio else "%.1f%% [%.1f-%.1f] of untraced; best runs: %.1f%%"
                                    % (ratio["median"] * 100, ratio["min"] * 100, ratio["max"] * 100,
                                       entry["best_ratio"] * 100)))
        w("")
    if results["convert"]:
        w("nvtxshim convert against the nCompass SDK's converter (nsys-chrome, from `pip install ncompass`),")
        w("the same SQLite export in, seconds per conversion, median [min-max] of %d interleaved runs;" % s.convert_runs)
        w("events: the output's events other than metadata (\"ph\":\"M\"); an async pair counts two. nCompass leaves")
        w("NVTX start/end ranges out (in the large export, every submission's range)")
        if results["convert"].get("missing"):
            w("  " + results["convert"]["missing"])
        for name, entry in results["convert"].items():
            if name == "missing":
                continue
            w("  %s: %d NVTX ranges and marks in the export" % (entry["label"], entry["nvtx"]))
            ncompass_row = next((v for k, v in entry["rows"].items() if k.startswith("nCompass")), None)
            for row, figures in entry["rows"].items():
                stat = figures["s"]
                w("    %-32s %7.3f s [%.3f-%.3f] %11d bytes %9d events%s" % (
                    row, stat["median"], stat["min"], stat["max"], figures["bytes"], figures["events"],
                    "   nCompass takes %.1fx as long" % (ncompass_row["s"]["median"] / stat["median"])
                    if ncompass_row and row.startswith("nvtxshim") else ""))
        w("")
    if results.get("memory"):
        w("memory of %d live threads that each recorded one range: resident growth in MB, median "
          "[min-max] of %d" % (s.memory_threads, s.rounds_memory))
        for name, entry in results["memory"].items():
            over = entry.get("over_none_kib")
            w("  %-26s %6.1f [%.1f-%.1f]%s" % (
                entry["label"], entry["kib"]["median"] / 1024, entry["kib"]["min"] / 1024,
                entry["kib"]["max"] / 1024,
                "" if not over else "   +%.1f MB over no library" % (over["median"] / 1024)))
        w("")
    if results["starts"]:
        w("start-up of /bin/true (a process that uses no hooked library): us per start, median [min-max] of %d"
          % s.rounds_starts)
        w("interleaved rounds of %d starts; ratio: each round over the empty preload library's" % s.n_starts)
        for name, entry in results["starts"].items():
            ratio = entry.get("over_empty")
            cell = "%.0f [%.0f-%.0f]" % (entry["ns"]["median"] / 1000, entry["ns"]["min"] / 1000,
                                        entry["ns"]["max"] / 1000)
            w("  %-26s %-24s %s" % (entry["label"], cell, "" if not ratio else "%.1f%% [%.1f-%.1f] of the empty library"
                                    % (ratio["median"] * 100, ratio["min"] * 100, ratio["max"] * 100)))
        w("")
    if results.get("long"):
        w(long_section(results))
        w("")
    w("targets")
    w("%-50s %-26s %-30s %s" % ("target", "call", "measured", "verdict"))
    w("-" * 125)
    for target, call, measured, result in targets(results):
        w("%-50s %-26s %-30s %s" % (target, call, measured, result))
    if results["checks"]:
        w("")
        w("checks: " + "; ".join(results["checks"]))


def profile_section(results, s):
    """Where the shim's cost goes: callgrind self cost per call, top functions."""
    files = results["callgrind_files"]
    lines = []
    for column, n, title in (("pftrace", s.n_callgrind_traced, "shim + NVTXSHIM_TRACE .pftrace"),
                             ("trace", s.n_callgrind_traced, "shim + NVTXSHIM_TRACE .json"),
                             ("null", s.n_callgrind, "shim + null NVTX tool"),
                             ("none", s.n_callgrind, "shim, no tool")):
        for kind, call, _ in KINDS[:2]:
            path = files.get(column, {}).get("shim", {}).get(kind)
            if not path:
                continue
            lines.append("callgrind, %s, %s: instructions per call by function (self)" % (title, call))
            for per_call, function in top_functions(path, n, 6 if column == "none" else 8):
                lines.append("  %9.1f  %s" % (per_call, function))
            lines.append("  (callgrind_annotate %s; the other kinds and rows beside it)"
                         % os.path.relpath(path, ROOT))
            lines.append("")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    s = Settings(parser.parse_args().build)
    needed = (s.shim, s.calls, s.null_tool, s.starts, s.empty) if set(PARTS) - s.skip - {"long"} else ()
    for path in needed + (() if "long" in s.skip else (s.nvtxshim, s.longtrace)):
        if not os.path.exists(path):
            sys.exit("bench: %s is missing: run make bench" % path)
    os.makedirs(s.scratch, exist_ok=True)
    env = clean_environment()
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    # the commit measured, "-dirty" when tracked files differ from it (a doc made from these
    # results names it: scripts/performance_doc.py)
    commit = subprocess.run(["git", "-C", os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             "describe", "--always", "--dirty", "--abbrev=12"],
                            capture_output=True, text=True).stdout.strip() or "?"
    results = {
        "meta": {"date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), "host": os.uname().nodename,
                 "commit": commit,
                 "cpu": "%s, %d CPUs, load %.1f" % (cpu, os.cpu_count(), os.getloadavg()[0]),
                 "nsys": s.nsys, "quick": s.quick, "only": sorted(s.only)},
        "settings": {k: v for k, v in vars(s).items() if isinstance(v, (int, str, bool))},
        "ns": {}, "instructions": {}, "callgrind_files": {}, "tools": {}, "harness": {}, "starts": {}, "memory": {}, "convert": {},
        "trace_bytes": {}, "long": {}, "checks": [],
    }
    started = time.monotonic()
    measure_calls(s, env, results)
    measure_instructions(s, env, results)
    measure_tools(s, env, results)
    measure_harness(s, env, results)
    measure_starts(s, env, results)
    measure_memory(s, env, results)
    measure_convert(s, env, results)
    measure_long(s, env, results)
    results["meta"]["seconds"] = round(time.monotonic() - started, 1)

    text = table(results, s)
    profile = profile_section(results, s)
    report = text + "\n\n" + profile + "(bench took %.0f s; load average now %.1f)\n" % (
        results["meta"]["seconds"], os.getloadavg()[0])
    with open(os.path.join(s.out, "results.txt"), "w") as f:
        f.write(report)
    with open(os.path.join(s.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    shutil.rmtree(s.scratch, ignore_errors=True)
    print()
    print(report)
    print("written: %s, %s" % (os.path.relpath(os.path.join(s.out, "results.txt"), ROOT),
                               os.path.relpath(os.path.join(s.out, "results.json"), ROOT)))
    missed = [line for line in targets(results) if line[3].startswith("NOT MET")]
    if missed and os.environ.get("BENCH_STRICT") == "1":
        sys.exit("bench: %d targets not met (BENCH_STRICT=1)" % len(missed))


if __name__ == "__main__":
    main()
