"""The nvtxshim command's dispatcher, run, profile and check: options
become the variables in the program's environment with the library appended to
LD_PRELOAD, profile's nsys command and its watchdog, a real profile of a capture
window on the emulated device, and check's lines against what this machine shows."""
import json
import os
import re
import select
import shlex
import shutil
import signal
import stat
import subprocess

import pytest

from variables import variables
from conftest import BUILD, PYTHON, ROOT, SHIM, clean_env, load_trace, names, program, ranges
from nsys import nvtx_events, run_nsys
from xserver import Xvfb

PUSH_POP, START_END = 59, 60
# make test-asan runs this file against build/asan (with libasan to preload first): its library
# cannot go into the uninstrumented shell that profile starts inside nsys (mk/sanitize.mk says why).
# Another uninstrumented build (NVS_TEST_BUILD=DIR) can.
DEFAULT_BUILD = os.path.realpath(BUILD) == os.path.realpath(os.path.join(ROOT, "build"))
real_nsys_only_in_the_default_build = pytest.mark.skipif(
    bool(os.environ.get("NVS_TEST_PRELOAD_FIRST")),
    reason="an instrumented shim in nsys's uninstrumented shell dies at load")
PRINT_ENV = [PYTHON, "-c", "import json, os; print(json.dumps(dict(os.environ)))"]


def nvtxshim(*args, env=None, timeout=120, cwd=None):
    """The command, in the tests' clean environment without DISPLAY (plus ENV)."""
    return subprocess.run([program("nvtxshim")] + [str(a) for a in args],
                          env=clean_env(env, drop=("DISPLAY",)),
                          capture_output=True, timeout=timeout, cwd=cwd)


# ---- the dispatcher and the manual pages ------------------------------------

def test_help_lists_the_commands_and_each_has_a_manual_page():
    result = nvtxshim("--help")
    assert result.returncode == 0 and result.stderr == b""
    for command in ("run", "profile", "check", "report", "convert", "diff", "top"):
        assert re.search(rb"^    %s " % command.encode(), result.stdout, re.M)
    for command in ("run", "profile", "check"):
        page = nvtxshim(command, "--help")
        assert page.returncode == 0 and page.stderr == b"", command
        headings = re.findall(rb"^([A-Z][A-Z ]+)$", page.stdout, re.M)
        assert headings == [b"NAME", b"SYNOPSIS", b"DESCRIPTION", b"OPTIONS", b"EXIT STATUS",
                            b"EXAMPLES"], command
        assert page.stdout.startswith(b"NAME\n    nvtxshim %s - " % command.encode())
        assert nvtxshim("help", command).stdout == page.stdout


def test_no_command_or_an_unknown_one_is_a_usage_error():
    for args in ((), ("frobnicate",), ("help", "frobnicate")):
        result = nvtxshim(*args)
        assert result.returncode == 2 and result.stdout == b"", args
        assert result.stderr, args


def test_every_variable_of_the_library_has_an_option():
    page = nvtxshim("run", "--help").stdout.decode()
    for variable, option, argument in variables():
        assert "Sets %s" % variable in page, variable
        assert re.search(r"^    --%s\b" % option, page, re.M), option


# ---- run ----------------------------------------------------------------------

ALL_OPTIONS = [("--hooks", "usb,x11", "NVTXSHIM_HOOKS", "usb,x11"),
               ("--frame", "usb.in:0x81", "NVTXSHIM_FRAME", "usb.in:0x81"),
               ("--frame-budget", "33ms", "NVTXSHIM_FRAME_BUDGET", "33ms"),
               ("--capture", "frames:100+5", "NVTXSHIM_CAPTURE", "frames:100+5"),
               ("--capture-via", "nvtx", "NVTXSHIM_CAPTURE_VIA", "nvtx"),
               ("--capture-name", "window@rig", "NVTXSHIM_CAPTURE_NAME", "window@rig"),
               ("--trace", "rig-%p.json", "NVTXSHIM_TRACE", "rig-%p.json"),
               ("--kernel=2ms", None, "NVTXSHIM_KERNEL", "on:2ms"),
               ("--log", "quiet", "NVTXSHIM_LOG", "quiet"),
               ("--shim-help", None, "NVTXSHIM_HELP", "1")]


def outside_preload():
    """A preload library already in LD_PRELOAD before nvtxshim run (the ASan suite's
    runtime must come first anyway)."""
    return os.environ.get("NVS_TEST_PRELOAD_FIRST") or program("test/libpreload_probe.so")


def test_run_appends_the_library_after_umockdevs_and_maps_every_option(make_device):
    options = []
    for option, value, _, _ in ALL_OPTIONS:
        options += [option] + ([value] if value else [])
    device = make_device()
    argv = device.wrap([program("nvtxshim"), "run"] + options + ["--"] + PRINT_ENV)
    env = clean_env({"LD_PRELOAD": outside_preload(), "NVTXSHIM_LIBRARY": SHIM})
    result = subprocess.run(argv, env=env, capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    preload = seen["LD_PRELOAD"].split(":")
    # emucam put umockdev's library first; what was there stays; the shim comes last.
    assert "umockdev" in preload[0] and outside_preload() in preload[1:-1]
    assert preload[-1] == os.path.realpath(SHIM) and preload.count(preload[-1]) == 1
    shim_variables = {k: v for k, v in seen.items() if k.startswith("NVTXSHIM_")}
    assert shim_variables == {variable: value for _, _, variable, value in ALL_OPTIONS}
    # --shim-help: the library itself was loaded and read its variables.
    assert b"nvtxshim: configuration" in result.stderr


def test_run_finds_the_library_beside_itself_and_keeps_the_program_as_it_is(make_device, tmp_path):
    trace = tmp_path / "trace.json"
    argv = [program("usb_capture"), "--frames", "3"]
    plain = subprocess.run(make_device().wrap(argv), env=clean_env(), capture_output=True,
                           timeout=60)
    # emucam -- nvtxshim run ... PROGRAM: no --library, no NVTXSHIM_LIBRARY, no --.
    env = clean_env()
    if os.environ.get("NVS_TEST_PRELOAD_FIRST"):
        env["LD_PRELOAD"] = os.environ["NVS_TEST_PRELOAD_FIRST"]
    result = subprocess.run(make_device().wrap(
        [program("nvtxshim"), "run", "--frame", "call:libusb_control_transfer", "--trace",
         str(trace)] + argv), env=env, capture_output=True, timeout=60)
    assert (result.stdout, result.returncode) == (plain.stdout, plain.returncode)
    events = load_trace(trace)
    frames = [n for n in names(events, "nvtxshim") if n.startswith("frame ")]
    assert frames == ["frame 1", "frame 2", "frame 3"]
    assert len([e for e in ranges(events, "usb") if e["name"].startswith("libusb_bulk")]) == 6


def test_run_adds_the_library_once_and_the_program_keeps_its_exit_status():
    dry = nvtxshim("run", "--dry-run", "--frame", "x11.swap", "--", "prog", "an arg",
                   env={"LD_PRELOAD": SHIM})
    assert dry.returncode == 0
    assert shlex.split(dry.stdout.decode()) == [
        "LD_PRELOAD=" + SHIM, "NVTXSHIM_FRAME=x11.swap", "prog", "an arg"]
    result = nvtxshim("run", "--", "sh", "-c", "exit 7", env={"LD_PRELOAD": outside_preload()})
    assert result.returncode == 7 and result.stderr == b""


@pytest.mark.parametrize("args, status, message", [
    (["--frobnicate", "--", "true"], 2, b"unknown option '--frobnicate'"),
    (["--frame"], 2, b"option '--frame' needs a value"),
    (["--frame", "usb.sideways", "--", "true"], 2, b"NVTXSHIM_FRAME='usb.sideways' is not valid"),
    (["--capture", "frames:3+2", "--", "true"], 2, b"NVTXSHIM_FRAME is off"),
    (["--frame", "x11.swap"], 2, b"no program to run"),
    (["--", "/nonexistent/program"], 127, b"cannot run /nonexistent/program"),
    (["--library", "/nonexistent/libnvtxshim.so", "--", "true"], 125, b"not found"),
])
def test_run_refuses_what_the_library_would_not_take(args, status, message):
    result = nvtxshim("run", *args)
    assert result.returncode == status and result.stdout == b""
    assert message in result.stderr, result.stderr


@pytest.mark.parametrize("command, shown", [("check", b"'-xy'"), ("run", b"'-x'"),
                                            ("profile", b"'-x'")])
def test_an_unknown_letter_in_a_cluster_is_named_in_the_usage_error(command, shown):
    # check names the word an unknown option came in, run and profile its letter. A cluster's
    # word is the one being read: the word before it was named ("unknown option 'check'").
    result = nvtxshim(command, "-xy", "--", "true")
    assert result.returncode == 2 and result.stdout == b""
    assert result.stderr == b"nvtxshim %s: unknown option %s (nvtxshim %s --help)\n" % (
        command.encode(), shown, command.encode())


# A rig's actuator on a pseudo-terminal, as a test bench has it: the port opened by its path,
# a command line written and read back, and a write to /dev/null. None of it is a device the
# library traces unless NVTXSHIM_DEVICES names it.
RIG_ON_A_PTY = """
import os
master, peer = os.openpty()
port = os.open(os.ttyname(peer), os.O_RDWR | os.O_NOCTTY)
os.write(master, b"move 1 2\\n")
print(os.read(port, 100).decode().strip())
with open("/dev/null", "w") as null:
    null.write("x")
"""


def first_preload():
    """The ASan suite's runtime, which must come first in a child's LD_PRELOAD; else nothing."""
    first = os.environ.get("NVS_TEST_PRELOAD_FIRST")
    return {"LD_PRELOAD": first} if first else {}


def test_run_says_in_one_line_when_nothing_was_traced(tmp_path):
    """The library makes its file at the first event, so a run that traced nothing leaves none:
    run says so at the end, naming what asked for the trace and what would trace the pty."""
    script = tmp_path / "rig.py"
    script.write_text(RIG_ON_A_PTY)
    trace = tmp_path / "t.json"
    result = nvtxshim("run", "--trace", trace, "--", PYTHON, script, env=first_preload(), cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, b"move 1 2\n"), result.stderr
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("nvtxshim: run: --trace %s: nothing was traced, so no trace file was "
                               "written: %s made no call that the library traces ("
                               % (trace, os.path.basename(PYTHON))), lines
    assert lines[0].endswith("other device files (a pty, /dev/ttyS*) are traced only where --devices "
                             "names them"), lines
    assert sorted(os.listdir(tmp_path)) == ["rig.py"]

    # Asked by the variable, with %p: a file an earlier run left under the name is not this run's.
    earlier = tmp_path / "t-1.json"
    earlier.write_text("[]\n")
    template = str(tmp_path / "t-%p.json")
    result = nvtxshim("run", "--devices", "/dev/ttyACM*", "--", PYTHON, script,
                      env=dict(first_preload(), NVTXSHIM_TRACE=template), cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, b"move 1 2\n"), result.stderr
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "nvtxshim: run: NVTXSHIM_TRACE=%s: nothing was traced" % template), lines
    assert lines[0].endswith("only where --devices names them (NVTXSHIM_DEVICES is '/dev/ttyACM*')")
    assert sorted(os.listdir(tmp_path)) == ["rig.py", "t-1.json"] and earlier.read_text() == "[]\n"

    # run --top's own temporary trace: the same line, naming --top.
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    result = nvtxshim("run", "--top", "--", PYTHON, script,
                      env=dict(first_preload(), TMPDIR=str(scratch)), cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, b"move 1 2\n"), result.stderr
    said = [line for line in result.stderr.decode().splitlines() if line.startswith("nvtxshim: run:")]
    assert len(said) == 1 and said[0].startswith("nvtxshim: run: --top: nothing was traced"), said
    assert os.listdir(scratch) == []

    # The control: the same rig with /dev/null named is traced, and nothing more is said.
    result = nvtxshim("run", "--trace", trace, "--devices", "/dev/null", "--", PYTHON, script,
                      env=first_preload(), cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"move 1 2\n", b"")
    assert [n for n in names(load_trace(trace), "serial") if "/dev/null" in n]


def test_run_with_a_trace_passes_signals_on_and_ends_as_its_program_does(tmp_path):
    """With a trace file the program is run's child: a signal sent to run's process id (a
    supervisor's, the capture trigger's SIGUSR1) reaches it, and its end is run's end."""
    waits = ("import os, signal, sys\n"
             "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})\n"
             "print('ready', flush=True)\n"
             "print('got', signal.Signals(signal.sigwait({signal.SIGUSR1})).name, flush=True)\n"
             "sys.exit(3)\n")
    trace = tmp_path / "t.json"
    run = subprocess.Popen([program("nvtxshim"), "run", "--trace", str(trace), "--", PYTHON, "-c",
                            waits], env=clean_env(first_preload()), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    try:
        ready, _, _ = select.select([run.stdout], [], [], 60)
        assert ready and run.stdout.readline() == b"ready\n"
        run.send_signal(signal.SIGUSR1)
        out, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert (run.returncode, out) == (3, b"got SIGUSR1\n"), err

    killed = nvtxshim("run", "--trace", trace, "--", PYTHON, "-c",
                      "import os, signal; os.kill(os.getpid(), signal.SIGTERM)", env=first_preload())
    assert killed.returncode == -signal.SIGTERM, killed.stderr
    exited = nvtxshim("run", "--trace", trace, "--", "sh", "-c", "exit 7", env=first_preload())
    assert exited.returncode == 7
    missing = nvtxshim("run", "--trace", trace, "--", "/nonexistent/program")
    assert (missing.returncode, missing.stderr) == (
        127, b"nvtxshim run: cannot run /nonexistent/program: No such file or directory\n")


# ---- profile --------------------------------------------------------------------

def profile_command(*args, cwd=None):
    result = nvtxshim("profile", "--dry-run", *args, cwd=cwd)
    assert result.returncode == 0, result.stderr
    words = shlex.split(result.stdout.decode())
    start = next(i for i, w in enumerate(words) if not re.match(r"NVTXSHIM_\w+=", w))
    variables = dict(w.split("=", 1) for w in words[:start])
    return variables, words[start:]


def nsys_part(words):
    """nsys profile's own options: from 'profile' to the shell that appends the shim."""
    return words[words.index("profile") + 1:words.index("sh")]


def test_profile_builds_the_nsys_command_from_the_options(tmp_path):
    frame = ("--frame", "call:libusb_control_transfer")
    variables, words = profile_command(*frame, "--capture", "frames:3+2", "--", "prog", "-x",
                                       cwd=tmp_path)
    assert variables == {"NVTXSHIM_FRAME": "call:libusb_control_transfer",
                         "NVTXSHIM_CAPTURE": "frames:3+2"}
    output = next(w for w in words if w.startswith("--output="))
    assert re.fullmatch(r"--output=%s/nvtxshim-\d+" % re.escape(str(tmp_path)), output)
    assert nsys_part(words) == [
        "--trace=nvtx", "--sample=none", "--cpuctxsw=none", "--capture-range=nvtx",
        "--nvtx-capture=capture@nvtxshim", "--capture-range-end=stop", output,
        "--force-overwrite=true", "--export=none"]
    # The program runs in a shell that appends the shim after nsys's own preload library.
    shell = words[words.index("sh"):]
    assert shell[:2] == ["sh", "-c"] and shell[3:] == ["nvtxshim", os.path.realpath(SHIM),
                                                       "prog", "-x"]
    # (Paths of no library: ld.so says so on stderr and runs the shell anyway.)
    env = clean_env({"LD_PRELOAD": "/nsys/libinjection.so"}, inherit=False)
    appended = subprocess.run(shell[:3] + ["nvtxshim", "/lib/shim.so", "sh", "-c",
                                           'echo "$LD_PRELOAD"'],
                              env=env, capture_output=True, check=True).stdout
    assert appended == b"/nsys/libinjection.so:/lib/shim.so\n"

    # Windows that come back make one report each: --capture-range-end=repeat.
    for capture in ("frames:3+2/5", "signal:USR2"):
        _, words = profile_command(*frame, "--capture", capture, "--", "prog")
        assert "--capture-range-end=repeat" in nsys_part(words)
    _, words = profile_command(*frame, "--capture", "frames:3+2", "--capture-via", "cuda",
                               "--", "prog")
    assert "--capture-range=cudaProfilerApi" in words and not any(
        w.startswith("--nvtx-capture") for w in words)
    _, words = profile_command("--capture", "calls:libusb_bulk_transfer:5+4", "--capture-name",
                               "window@rig", "--apis", "osrt,cuda", "--cpu-sampling", "-o",
                               tmp_path / "rig.nsys-rep", "--", "prog")
    part = nsys_part(words)
    assert {"--nvtx-capture=window@rig", "--trace=nvtx,osrt,cuda", "--sample=process-tree",
            "--cpuctxsw=process-tree", "--output=%s/rig" % tmp_path} <= set(part)
    _, words = profile_command("--", "prog")
    assert not any(w.startswith("--capture") for w in nsys_part(words))


def test_profile_passes_nsys_options_on_and_theirs_replace_its_own(tmp_path):
    # -- NSYS_OPTIONS -- PROGRAM: a word after the first -- that is not an option is the
    # program, so a device runner's own -- stays with it.
    _, words = profile_command("--", "-t", "nvtx,osrt", "-o", tmp_path / "mine", "--stats=true",
                               "--", "emucam", "--", "prog")
    part = nsys_part(words)
    assert part[-3:] == ["-t", "nvtx,osrt", "--stats=true"]
    assert not any(w.startswith("--trace") for w in part)
    assert "--output=%s/mine" % tmp_path in part
    assert words[-3:] == ["emucam", "--", "prog"]
    _, words = profile_command("--", "emucam", "--", "prog")
    assert words[-3:] == ["emucam", "--", "prog"] and "emucam" not in nsys_part(words)


@pytest.mark.parametrize("args, message", [
    (["--trace", "t.json", "--", "prog"], b"--trace: under nsys the events go to nsys"),
    (["--", "-t", "nvtx", "prog"], b"end with a second --"),
    (["-o", "a", "--", "-o", "b", "--", "prog"], b"both name the report"),
    (["-o", "a%h", "--", "prog"], b"%p is the only % sequence"),
    (["--timeout", "soon", "--", "prog"], b"'soon' is not a number of seconds"),
    (["--capture", "frames:3+2", "--", "prog"], b"NVTXSHIM_FRAME is off"),
])
def test_profile_usage_errors(args, message, tmp_path):
    result = nvtxshim("profile", *args, cwd=tmp_path)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert os.listdir(tmp_path) == []


def test_profile_will_not_overwrite_a_report_without_force(tmp_path):
    (tmp_path / "rig.nsys-rep").write_bytes(b"mine")
    result = nvtxshim("profile", "-o", "rig", "--", "true", cwd=tmp_path)
    assert result.returncode == 2 and b"--force replaces it" in result.stderr
    assert (tmp_path / "rig.nsys-rep").read_bytes() == b"mine"


def test_profile_without_nsys_says_so():
    result = nvtxshim("profile", "--nsys", "nsys-not-here", "--", "true")
    assert result.returncode == 125 and b"nsys-not-here not found" in result.stderr


# An nsys that never returns, with an agent like nsys 2022.4's: its own session,
# SIGTERM ignored, named after the nsys process.
FAKE_NSYS = r"""#!/bin/sh
echo $$ >> "$FAKE_DIR/nsys.pids"
mkfifo "$FAKE_DIR/agent.$$"
setsid -f "$FAKE_PYTHON" -c 'import os, signal, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(sys.argv[1], "w") as f:
    f.write("%d\n" % os.getpid())
signal.pause()' "$FAKE_DIR/agent.$$" --start-agent --session-name=profile-prog-$$
# In a subshell: while it waits for the agent, nsys has a living child, as when it starts a program.
(read agent < "$FAKE_DIR/agent.$$"; echo "$agent" >> "$FAKE_DIR/agent.pids")
if [ "$FAKE_MODE" = busy ]; then
    tail -f /dev/null &
    echo $! >> "$FAKE_DIR/program.pids"
    wait
fi
exec tail -f /dev/null
"""


def gone(pid, timeout=30):
    """Whether PID has ended (SIGKILL takes effect a moment after kill returns)."""
    try:
        descriptor = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([descriptor], [], [], timeout)[0])
    finally:
        os.close(descriptor)


def pids(path):
    return [int(line) for line in path.read_text().split()] if path.exists() else []


@pytest.mark.parametrize("mode, limits", [
    ("hang", ["--finish-timeout", "1"]),           # the program ended, nsys never returns
    ("busy", ["--timeout", "3", "--finish-timeout", "0"]),   # the whole run's limit
])
def test_profile_watchdog_kills_nsys_what_it_started_and_its_agent_then_retries(
        tmp_path, mode, limits):
    fake = tmp_path / "nsys"
    fake.write_text(FAKE_NSYS)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    env = {"FAKE_DIR": str(tmp_path), "FAKE_MODE": mode, "FAKE_PYTHON": PYTHON}
    result = nvtxshim("profile", "--nsys", fake, *limits, "-o", tmp_path / "rig", "--", "prog",
                      env=env, timeout=60)
    assert result.returncode == 125, result.stderr
    stderr = result.stderr.decode()
    assert stderr.count("nsys did not finish within") == 2
    assert "killed it, what it started and 1 agent" in stderr
    assert "once more" in stderr and "giving up" in stderr
    assert len(pids(tmp_path / "nsys.pids")) == 2 and len(pids(tmp_path / "agent.pids")) == 2
    assert len(pids(tmp_path / "program.pids")) == (2 if mode == "busy" else 0)
    for pid in (pids(tmp_path / "nsys.pids") + pids(tmp_path / "agent.pids") +
                pids(tmp_path / "program.pids")):
        assert gone(pid), pid


def test_profile_bare_runs_nsys_as_given_under_the_same_watchdog(tmp_path):
    fake = tmp_path / "nsys"
    fake.write_text(FAKE_NSYS)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    # Nothing added but the report's name: no library, no variables, no nsys options of its own.
    result = nvtxshim("profile", "-n", "--bare", "--nsys", fake, "-o", "rig", "--", "-t", "osrt",
                      "--", "prog", "a b", cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == b""
    assert shlex.split(result.stdout.decode()) == [
        str(fake), "profile", "--output=%s/rig" % tmp_path, "-t", "osrt", "prog", "a b"]
    for option in (["--frame", "usb.in"], ["--kernel"], ["--library", SHIM], ["--apis", "osrt"],
                   ["--cpu-sampling"]):
        refused = nvtxshim("profile", "--bare", *option, "--", "prog", cwd=tmp_path)
        assert refused.returncode == 2, option
        assert b"%s does not go with --bare" % option[0].encode() in refused.stderr
    # The watchdog, as without --bare: a hang ended (nsys, what it started, its agent), once more.
    env = {"FAKE_DIR": str(tmp_path), "FAKE_MODE": "hang", "FAKE_PYTHON": PYTHON}
    result = nvtxshim("profile", "--bare", "--nsys", fake, "--finish-timeout", "1", "-o",
                      tmp_path / "rig", "--", "-t", "nvtx", "--", "prog", env=env, timeout=60)
    assert result.returncode == 125 and result.stdout == b"", result.stderr
    stderr = result.stderr.decode()
    assert stderr.count("nsys did not finish within") == 2
    assert "killed it, what it started and 1 agent" in stderr and "giving up" in stderr
    assert len(pids(tmp_path / "nsys.pids")) == 2 and len(pids(tmp_path / "agent.pids")) == 2
    for pid in pids(tmp_path / "nsys.pids") + pids(tmp_path / "agent.pids"):
        assert gone(pid), pid


def recorded_frames(events):
    return sorted(int(e[2].split(" ")[1]) for e in events
                  if e[0] in (PUSH_POP, START_END) and e[1] == "nvtxshim" and e[2].startswith("frame "))


def summary_of(database):
    """What nvtxshim report prints for DATABASE: profile must print the same."""
    return nvtxshim("report", database).stdout


def profile_under_nsys(cwd, reports, *args):
    """nvtxshim profile ARGS in CWD under the real nsys, made again while nsys fails of itself
    (hangs past --finish-timeout, the time it spends with no program running, or throws), the test
    skipped with the reason when it does each time (test/nsys.py, run_nsys); the last result."""
    return run_nsys([program("nvtxshim"), "profile", "--finish-timeout", "60"] + [str(a) for a in args],
                    [str(report) for report in reports], env=clean_env(None, drop=("DISPLAY",)),
                    cwd=cwd, timeout=600)


@real_nsys_only_in_the_default_build
def test_profile_records_exactly_the_window_and_prints_the_summary(make_device, tmp_path):
    device = make_device(frames=6)
    # The stand-in CUDA driver for the harness only: never in nsys's own environment.
    harness = ["env", "LD_LIBRARY_PATH=" + os.path.join(BUILD, "test", "stub"),
               program("harness_physical"), "--frames", "6"]
    result = profile_under_nsys(tmp_path, [tmp_path / "rig.nsys-rep"], "--frame",
                                "call:libusb_control_transfer", "--capture", "frames:3+2", "-o", "rig",
                                "--", *device.wrap(harness))
    assert result.returncode == 0, result.stderr[-3000:]
    stdout = result.stdout.decode()
    assert "frames=6 errors=0" in stdout
    report, database = tmp_path / "rig.nsys-rep", tmp_path / "rig.sqlite"
    assert "\n== report: %s\n" % report in stdout and "SQLite export: %s\n" % database in stdout
    events = nvtx_events(str(database))
    assert recorded_frames(events) == [3, 4]
    controls = sorted((e[3], e[2]) for e in events if e[2].startswith("libusb_control_transfer"))
    assert [name for _, name in controls] == [
        "libusb_control_transfer type=0x40 req=0x01 val=0x%04x OUT 0B" % i for i in (2, 3)]
    summary = summary_of(database)
    assert summary.decode() in stdout[stdout.index("SQLite export"):]
    assert sorted(os.listdir(tmp_path)) == ["rig.nsys-rep", "rig.sqlite"]


@real_nsys_only_in_the_default_build
def test_profile_repeated_windows_give_a_report_each(make_device, tmp_path):
    device = make_device(frames=14)
    result = profile_under_nsys(tmp_path, [tmp_path / ("loop.%d.nsys-rep" % n) for n in (1, 2, 3)],
                                "--frame", "call:libusb_control_transfer", "--capture", "frames:3+2/5",
                                "-o", "loop", "--", *device.wrap([program("test/frame_loop"), "14"]))
    assert result.returncode == 0, result.stderr[-3000:]
    stdout = result.stdout.decode()
    windows = []
    for n in (1, 2, 3):
        report = tmp_path / ("loop.%d.nsys-rep" % n)
        assert "== report %d of 3 (window %d): %s\n" % (n, n, report) in stdout
        database = str(tmp_path / ("loop.%d.sqlite" % n))
        windows.append(recorded_frames(nvtx_events(database)))
        assert summary_of(database).decode() in stdout
    assert windows == [[3, 4], [8, 9], [13, 14]]


# ---- check ------------------------------------------------------------------------

def check_lines(result):
    lines = result.stdout.decode().splitlines()
    assert lines and all(re.match(r"(OK  |WARN|FAIL) \S", line) for line in lines[:-1]), lines
    assert lines[-1].startswith("nvtxshim check: ")
    return lines


def line_about(lines, pattern):
    found = [line for line in lines if re.search(pattern, line)]
    assert len(found) == 1, (pattern, lines)
    return found[0]


def probe_built_in():
    # The library opens libbpf with dlopen for the probe: built with it, it holds the probe's
    # own announcement.
    with open(SHIM, "rb") as f:
        return b"kernel probe on:" in f.read()


def test_check_on_this_machine():
    result = nvtxshim("check", timeout=180)
    lines = check_lines(result)
    nsys = shutil.which("nsys")
    assert nsys, "the test machines have nsys (make deps)"
    assert result.returncode == 0 and lines[-1].startswith("nvtxshim check: profiling can proceed")
    assert not [line for line in lines if line.startswith("FAIL")]
    assert line_about(lines, r"^OK   library ").startswith("OK   library %s (" % os.path.realpath(SHIM))
    version = subprocess.run([nsys, "--version"], env=clean_env(), capture_output=True,
                             text=True).stdout
    assert line_about(lines, r"^OK   nsys \d") == "OK   nsys %s at %s" % (
        version.split("version ")[1].strip(), nsys)
    kernel = line_about(lines, r"kernel probe \(--kernel\)")
    if os.geteuid() == 0 and os.path.exists("/sys/kernel/btf/vmlinux") and probe_built_in():
        assert kernel.startswith("OK   kernel probe (--kernel): root, BTF at /sys/kernel/btf/vmlinux")
    else:
        assert kernel.startswith("WARN")
    if os.geteuid() == 0:
        assert line_about(lines, r"perf_event_paranoid").startswith("OK  ")
    assert line_about(lines, r"DISPLAY").startswith(
        "WARN DISPLAY is not set: programs cannot open a window")
    assert line_about(lines, r"libusb ").startswith("OK   libusb 1.0.")
    if not os.path.isdir("/dev/bus/usb"):
        # the emulated camera built beside this command, by its path (the wheel has none)
        assert line_about(lines, r"USB device").startswith(
            "WARN no USB devices visible (no /dev/bus/usb): only an emulated device works here, such "
            "as the emulated camera %s (fix: " % os.path.realpath(program("emucam")))
    container = line_about(lines, r"^OK   (not )?in a container")
    assert ("in a container (docker: /.dockerenv)" in container) == os.path.exists("/.dockerenv")
    for line in lines:
        if line.startswith(("WARN", "FAIL")):
            assert "(fix: " in line, line


@pytest.mark.parametrize("kind", ["local", "remote", "no MIT-SHM"])
def test_check_tells_the_display_apart(kind, xserver):
    server = None
    if kind == "local":
        display, expected = xserver.display, "OK   DISPLAY=%s: local (Unix socket), MIT-SHM offered"
    elif kind == "remote":
        server = Xvfb("-listen", "tcp", "-ac")
        display = "127.0.0.1:%d" % server.number
        expected = "WARN DISPLAY=%s is remote (TCP, as ssh -X gives)"
    else:
        server = Xvfb("-nolisten", "tcp", "-extension", "MIT-SHM")
        display = server.display
        expected = "WARN DISPLAY=%s: local, but the server offers no MIT-SHM"
    try:
        lines = check_lines(nvtxshim("check", env={"DISPLAY": display}, timeout=180))
    finally:
        if server:
            server.stop()
    assert line_about(lines, r"DISPLAY").startswith(expected % display)
    lines = check_lines(nvtxshim("check", env={"DISPLAY": ":999"}, timeout=180))
    assert line_about(lines, r"DISPLAY").startswith("WARN DISPLAY=:999: cannot connect")


def test_check_fails_cleanly_without_nsys_or_a_usable_tmpdir(tmp_path):
    result = nvtxshim("check", env={"PATH": str(tmp_path)}, timeout=180)
    lines = check_lines(result)
    assert result.returncode == 1 and result.stderr == b""
    assert line_about(lines, r"nsys not found").startswith(
        "FAIL nsys not found on PATH: nvtxshim profile cannot run; without it, nvtxshim run --trace "
        "FILE records")
    assert "https://developer.nvidia.com/nsight-systems" in line_about(lines, r"nsys not found")
    assert [line[:4] for line in lines].count("FAIL") == 1
    assert lines[-1] == ("nvtxshim check: profiling cannot proceed: 1 FAIL line above (recording to "
                         "a trace file can: nvtxshim run --trace FILE -- PROGRAM)")
    # Every other line is still there.
    assert len(lines) == len(check_lines(nvtxshim("check", timeout=180))) - 1

    result = nvtxshim("check", env={"TMPDIR": str(tmp_path / "missing")}, timeout=180)
    assert result.returncode == 1
    assert line_about(check_lines(result), r"TMPDIR").startswith(
        "FAIL TMPDIR=%s is not a writable directory" % (tmp_path / "missing"))
    result = nvtxshim("check", "--library", tmp_path / "libnvtxshim.so", timeout=180)
    assert result.returncode == 1
    assert line_about(check_lines(result), r"library").startswith("FAIL library libnvtxshim.so not found")


# ---- install ------------------------------------------------------------------------

@pytest.mark.skipif(not DEFAULT_BUILD, reason="make install installs the default build")
def test_make_install_puts_the_command_beside_the_library(tmp_path):
    subprocess.run(["make", "--no-print-directory", "-C", ROOT, "install", "DESTDIR=%s" % tmp_path,
                    "PREFIX=/opt/nvs"], env=clean_env(), check=True, capture_output=True,
                   timeout=300)
    command = tmp_path / "opt/nvs/bin/nvtxshim"
    library = tmp_path / "opt/nvs/lib/libnvtxshim.so"
    assert command.exists() and library.exists()
    dry = subprocess.run([str(command), "run", "--dry-run", "--", "prog"], capture_output=True,
                         env=clean_env({"PATH": "/usr/bin:/bin"}, inherit=False), check=True)
    assert dry.stdout.decode().split() == ["LD_PRELOAD=%s" % library, "prog"]
