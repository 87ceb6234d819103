"""What the command reads (cli/readers/input.c, cli/readers/load.c): a trace file, JSON or .pftrace, plain or
gzipped, is known by its content whatever its name, from a file, a pipe or standard input
("-"); an input that is not a trace is refused at its first bytes, without inflating a gzip
bomb; what may be held in memory is capped, and the cap says how to raise it. The traces are
recorded from the emulated camera's frame loop."""
import gzip
import os
import random
import re
import shutil
import subprocess
import sys

import pytest

from conftest import Device, clean_env, program, run

FRAMES = 250          # the emulated camera numbers its frames in a byte
FORMS = ["json", "pftrace"]


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """{form: a recorded trace of FRAMES frames in that form}."""
    where = tmp_path_factory.mktemp("input")
    made = {}
    for form in FORMS:
        path = where / ("loop." + form)
        result = run([program("test/frame_loop"), str(FRAMES), "--sleep-us", "200"],
                     env={"NVTXSHIM_FRAME": "call:libusb_control_transfer",
                          "NVTXSHIM_TRACE": str(path)},
                     device=Device(FRAMES, []))
        assert result.returncode == 0, result.stderr[-2000:]
        made[form] = path
    return made


def nvtxshim(*args, stdin=None):
    return subprocess.run([program("nvtxshim")] + [str(a) for a in args], env=clean_env(),
                          capture_output=True, stdin=stdin, timeout=300)


def report_of(path):
    """report's output on PATH (it does not name its input: the same for every way in)."""
    result = nvtxshim("report", path)
    assert result.returncode == 0 and result.stderr == b"", result.stderr
    return result.stdout


def gzipped(path, into):
    with open(path, "rb") as plain, gzip.open(into, "wb") as packed:
        shutil.copyfileobj(plain, packed)
    return into


@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("form", FORMS)
def test_report_reads_each_form_from_standard_input_and_from_a_pipe(traces, tmp_path, form, packed):
    path = traces[form]
    if packed:
        path = gzipped(path, tmp_path / (path.name + ".gz"))
    expected = report_of(path)
    assert re.search(rb"\n  nvtxshim  frame N +%d " % FRAMES, expected), expected[:400]
    with open(path, "rb") as f:
        dash = nvtxshim("report", "-", stdin=f)
    assert (dash.returncode, dash.stderr, dash.stdout) == (0, b"", expected)
    for way in ("cat '%s' | '%s' report -", "cat '%s' | '%s' report /dev/stdin"):
        piped = subprocess.run(way % (path, program("nvtxshim")), shell=True, env=clean_env(),
                               capture_output=True, timeout=300)
        assert (piped.returncode, piped.stderr, piped.stdout) == (0, b"", expected), way


def test_the_content_decides_the_form_not_the_name(traces, tmp_path):
    json_named_pftrace = tmp_path / "really-json.pftrace"
    shutil.copy(traces["json"], json_named_pftrace)
    pftrace_named_json = tmp_path / "really-pftrace.json"
    shutil.copy(traces["pftrace"], pftrace_named_json)
    gzip_named_plain = gzipped(traces["json"], tmp_path / "packed.json")
    assert report_of(json_named_pftrace) == report_of(traces["json"])
    assert report_of(pftrace_named_json) == report_of(traces["pftrace"])
    assert report_of(gzip_named_plain) == report_of(traces["json"])


def peak_memory_kib(argv):
    """The exit status, stderr and peak resident memory (KiB) of ARGV, run alone."""
    probe = ("import resource, subprocess, sys\n"
             "done = subprocess.run(sys.argv[1:], capture_output=True)\n"
             "sys.stderr.buffer.write(done.stderr)\n"
             "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    result = subprocess.run([sys.executable, "-c", probe] + [str(a) for a in argv],
                            env=clean_env(), capture_output=True, timeout=300)
    status, peak = result.stdout.split()
    return int(status), result.stderr.decode(), int(peak)


def test_a_gzip_of_zeros_is_refused_at_its_first_bytes(tmp_path):
    # 1 GiB of zeros, 4.6 MB gzipped: it used to be inflated whole (1 GB of memory) before
    # the reader said it was not JSON.
    bomb = tmp_path / "zeros.json.gz"
    block = bytes(1 << 20)
    with gzip.open(bomb, "wb", compresslevel=1) as packed:
        for _ in range(1024):
            packed.write(block)
    assert bomb.stat().st_size < 8 << 20
    for argv in (["report", bomb], ["sh", "-c", "exec '%s' report - < '%s'" % (program("nvtxshim"), bomb)]):
        if argv[0] == "report":
            argv = [program("nvtxshim")] + argv
        status, stderr, peak = peak_memory_kib(argv)
        assert status == 1 and stderr.count("\n") == 1, stderr
        assert stderr.startswith("nvtxshim: report: cannot read ") and \
            stderr.rstrip().endswith(": not a trace (JSON or .pftrace) or an nsys export"), stderr
        assert peak < 64 * 1024, "%d KiB at its peak" % peak


def test_a_gzip_of_a_bracket_and_a_gibibyte_of_blanks_is_read_through_in_little_memory(tmp_path):
    # "[" and 256 MiB of blanks, 256 KB gzipped: JSON from its first byte, so it is read to its
    # end; it used to be inflated whole first (1.05 GB for a gibibyte). Read as a stream, it takes
    # a window.
    bomb = tmp_path / "blanks.json.gz"
    block = b" " * (1 << 20)
    with gzip.open(bomb, "wb", compresslevel=9) as packed:
        packed.write(b"[")
        for _ in range(256):
            packed.write(block)
    assert bomb.stat().st_size < 1 << 20
    for argv in ([program("nvtxshim"), "report", bomb],
                 ["sh", "-c", "exec '%s' report - < '%s'" % (program("nvtxshim"), bomb)]):
        status, stderr, peak = peak_memory_kib(argv)
        lines = stderr.splitlines()
        assert status == 1 and len(lines) == 2, stderr
        assert "ends before its closing ]" in lines[0] and "read 0 events" in lines[0], stderr
        assert lines[1].startswith("nvtxshim: report: no NVTX events in "), stderr
        assert peak < 64 * 1024, "%d KiB at its peak" % peak


@pytest.mark.parametrize("form", FORMS)
def test_what_an_input_takes_in_memory_has_a_cap_a_user_can_raise(traces, tmp_path, form):
    packed = gzipped(traces[form], tmp_path / ("loop.%s.gz" % form))
    size = os.path.getsize(traces[form])
    assert size > 20 * 1024, size
    capped = nvtxshim("report", "--max-input", "16k", packed)
    assert capped.returncode == 1 and capped.stdout == b""
    assert capped.stderr.decode() == (
        "nvtxshim: report: cannot read %s: more than 16384 bytes once decompressed "
        "(--max-input SIZE raises the limit)\n" % packed)
    # From a pipe (standard input that is a file is mapped, as a file is).
    piped = subprocess.run("cat '%s' | '%s' report --max-input 16KiB -" % (traces[form],
                           program("nvtxshim")), shell=True, env=clean_env(), capture_output=True,
                           timeout=300)
    assert piped.returncode == 1 and piped.stderr.decode() == (
        "nvtxshim: report: cannot read -: more than 16384 bytes "
        "(--max-input SIZE raises the limit)\n")
    raised = nvtxshim("report", "--max-input", "%d" % size, packed)
    assert raised.returncode == 0, raised.stderr
    assert raised.stdout == report_of(traces[form])
    # A plain file is mapped, not read into memory: the cap does not apply to it.
    assert nvtxshim("report", "--max-input", "16k", traces[form]).returncode == 0


@pytest.mark.parametrize("value", ["0", "12q", "-5", "k", ""])
def test_a_bad_max_input_is_one_line(traces, value):
    result = nvtxshim("report", "--max-input", value, traces["json"])
    assert result.returncode == 2 and result.stdout == b""
    assert result.stderr.decode().startswith("nvtxshim: report: --max-input ") and \
        result.stderr.count(b"\n") == 1, result.stderr


def test_an_empty_pipe_and_a_pipe_of_garbage_say_why(tmp_path):
    empty = subprocess.run("'%s' report - < /dev/null" % program("nvtxshim"), shell=True,
                           env=clean_env(), capture_output=True, timeout=60)
    assert empty.returncode == 1 and empty.stderr.count(b"\n") == 1, empty.stderr
    garbage = subprocess.run("head -c 200000 /dev/urandom | tr -d '[{\\n\\t\\r ' | '%s' report -"
                             % program("nvtxshim"), shell=True, env=clean_env(),
                             capture_output=True, timeout=60)
    assert garbage.returncode == 1 and garbage.stderr.decode().endswith(
        "not a trace (JSON or .pftrace) or an nsys export\n"), garbage.stderr


def test_zlib_concatenated_members_are_read_whole(traces, tmp_path):
    # gzip files concatenate (cat a.gz b.gz): the whole text is what is read.
    text = traces["json"].read_bytes()
    half = len(text) // 2
    joined = tmp_path / "two-members.json.gz"
    joined.write_bytes(gzip.compress(text[:half]) + gzip.compress(text[half:]))
    assert report_of(joined) == report_of(traces["json"])


# ---- Nsight Systems reports: known by their first bytes ------------------------------------------

REPORT_HEADER = b"NVIDIA Tegra Profiler Report "   # every .nsys-rep (and .qdrep) begins so
NOT_A_REPORT = ('nvtxshim: report: cannot read %s: %snot an Nsight Systems report (one begins "NVIDIA '
                'Tegra Profiler Report"), nor a trace or an nsys export\n')


def fake_nsys(tmp_path):
    """An nsys that notes its arguments in CALLED and fails as nsys export does: its progress
    bar, then its error. (NSYS_PATH, CALLED)."""
    called = tmp_path / "called"
    nsys = tmp_path / "fake-nsys"
    nsys.write_text("#!/bin/sh\n"
                    "printf '%%s\\n' \"$@\" > '%s'\n"
                    "printf 'Exporting 218 events: [1%%%%      ]\\r' >&2\n"
                    "echo 'Exportation error: Section Table Reference is absent.' >&2\n"
                    "exit 1\n" % called)
    nsys.chmod(0o755)
    return nsys, called


def report_with(nsys, path):
    return subprocess.run([program("nvtxshim"), "report", str(path)], env=clean_env({"NSYS": str(nsys)}),
                          capture_output=True, text=True, timeout=120)


def test_a_file_named_as_an_nsys_report_is_known_by_its_content(traces, tmp_path):
    # Random bytes, an empty file and a text named .nsys-rep or .qdrep are no report: one line
    # says so, and nsys is never run. A trace so named is read as the trace it is.
    nsys, called = fake_nsys(tmp_path)
    # The same random bytes every run, after a first byte that begins nothing the command
    # reads (os.urandom's began a Perfetto packet, 0x0a, about one run in 256: then the
    # command rightly reads a trace that breaks at its first field, and says so).
    noise = b"\xff" + random.Random(5000).randbytes(4999)
    cases = {"random.nsys-rep": (noise, ""), "empty.nsys-rep": (b"", "empty, "),
             "notes.qdrep": (b"a report, or so its name says\n" * 10, "")}
    for name, (content, empty) in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        result = report_with(nsys, path)
        assert (result.returncode, result.stdout) == (1, ""), result.stderr
        assert result.stderr == NOT_A_REPORT % (path, empty)
        assert not called.exists(), "nsys export was run for %s" % name
    for form in FORMS:
        named = tmp_path / ("%s-trace.nsys-rep" % form)
        shutil.copy(traces[form], named)
        result = report_with(nsys, named)
        assert (result.returncode, result.stderr) == (0, ""), result.stderr
        assert result.stdout.encode() == report_of(traces[form])
        assert not called.exists()


@pytest.mark.parametrize("name", ["capture.nsys-rep", "capture.qdrep", "capture.bin"])
def test_an_nsys_report_goes_to_nsys_export_whatever_its_name_and_its_failure_is_one_line(tmp_path, name):
    nsys, called = fake_nsys(tmp_path)
    path = tmp_path / name
    path.write_bytes(REPORT_HEADER + b"1.\n\x0bLocal (CLI)" + os.urandom(300))
    database = tmp_path / (name.rsplit(".", 1)[0] + ".sqlite" if name.endswith("rep") else name + ".sqlite")
    result = report_with(nsys, path)
    assert (result.returncode, result.stdout) == (1, "")
    # the line that says the export is under way, ended by nsys's own last line
    assert result.stderr == ("nvtxshim: report: exporting %s to %s (nsys export --type sqlite): %s export "
                             "failed: Exportation error: Section Table Reference is absent.\n"
                             % (path, database, nsys))
    assert called.read_text().splitlines() == ["export", "--type", "sqlite", "--force-overwrite", "true", "-o",
                                               str(database), str(path)]
    # no nsys at all: one line too
    missing = report_with(tmp_path / "no-such-nsys", path)
    assert missing.returncode == 1 and missing.stderr == (
        "nvtxshim: report: exporting %s to %s (nsys export --type sqlite): cannot run %s: not found "
        "(install Nsight Systems, or set NSYS)\n" % (path, database, tmp_path / "no-such-nsys"))


def test_the_real_nsys_export_failing_is_one_line(tmp_path):
    # A report's header and nothing of a report after it: nsys export itself refuses it.
    nsys = shutil.which("nsys")
    if not nsys:
        pytest.skip("nsys is not installed (Debian's nsight-systems)")
    path = tmp_path / "cut.nsys-rep"
    path.write_bytes(REPORT_HEADER + b"1.\n\x0bLocal (CLI)" + bytes(300))
    result = report_with(nsys, path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(
        "nvtxshim: report: exporting %s to %s (nsys export --type sqlite): %s export failed: "
        % (path, tmp_path / "cut.sqlite", nsys)), result.stderr
    assert "Exporting" not in result.stderr   # its progress bar left out
