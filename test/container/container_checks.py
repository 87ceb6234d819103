"""make test-container: the image docker/Dockerfile builds (scripts/container.sh built it), run
through docker/run.sh as its users run it, and compared with the same runs outside it.

Not collected by `make test` (its name is no test_*.py): scripts/container.sh runs this file
with NVS_CONTAINER_ENGINE (docker or podman), NVS_CONTAINER_IMAGE (the image) and
NVS_TEST_BUILD (the build outside, for the runs to compare with).

- the image's own command, make demo (nsys inside, the figures test/test_demo.py asserts),
  `nvtxshim check` (it says it is in a container; the installed library and command are the
  ones make demo ran), and run.sh with docker and with podman;
- X11 forwarding: the Python harness's window inside on an Xvfb outside, reached through the
  X socket and the cookie run.sh mounts, the C harness's MIT-SHM images (--ipc=host), and
  over TCP (ssh -X's DISPLAY=localhost:N), each trace compared with the same run's outside;
- devices into the container: the emulated USB camera (its umockdev test bed, run outside),
  the V4L2 camera double and a pty as the serial port (the servo outside), the trace inside
  carrying the calls and bytes of the trace outside;
- nsys inside: nvtxshim profile's report, read outside by nvtxshim report."""
import collections
import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import PYTHON, ROOT, clean_env, load_trace, names, program, ranges
from nsys import run_nsys
from test_demo import FRAMES as DEMO_FRAMES, check_camera_rig, check_report, parts
from test_harness_python import expected_summary, usb_names
from xserver import Xvfb

ENGINE = os.environ.get("NVS_CONTAINER_ENGINE", "podman")
IMAGE = os.environ.get("NVS_CONTAINER_IMAGE", "nvtxshim-test")
RUN_SH = os.path.join(ROOT, "docker", "run.sh")
# The image's checkout and what it built there (docker/Dockerfile).
INSIDE = "/opt/libnvtxshim"
HARNESS = "examples/harness_physical.py"
EMUSERVO = "examples/emuservo.py"
FRAMES = 12
TIMEOUT_S = 600


def in_container(argv, cwd, options=(), env=None, engine=ENGINE, timeout=TIMEOUT_S):
    """docker/run.sh -- ARGV from CWD (mounted at /work, the working directory there), with
    OPTIONS for the engine's run. No GPU here: run.sh is told so rather than finding out."""
    command = [RUN_SH, "--engine", engine, "--image", IMAGE, "--no-gpu"] + \
        ["--docker-opt=" + option for option in options]
    command += ["--"] + list(argv) if argv else []
    return subprocess.run(command, cwd=str(cwd), env=clean_env(env), stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=timeout)


def ok(result):
    assert result.returncode == 0, (result.args, result.returncode, result.stdout.decode()[-3000:],
                                    result.stderr.decode(errors="replace")[-3000:])
    return result


def lines_of(result):
    return result.stdout.decode().splitlines()


def report_json(path, cwd):
    """`nvtxshim report PATH --json` outside (the build's command), as a dict."""
    result = ok(subprocess.run([program("nvtxshim"), "report", str(path), "--json"], cwd=str(cwd),
                               env=clean_env(), capture_output=True, timeout=TIMEOUT_S))
    return json.loads(result.stdout)


def name_counts(document, domains):
    return {(row["domain"], row["name"]): row["count"] for row in document["names"]
            if row["domain"] in domains}


def the_process(document):
    [process] = document["processes"]
    return process


# ---- X servers outside, with a cookie -----------------------------------------------------

class CookieXvfb(Xvfb):
    """An Xvfb outside the container that admits only clients with its cookie: XAUTHORITY
    (a file of the test's) holds it for the display's number, as a login session's does."""

    def __init__(self, where, *extra):
        cookie = os.urandom(16).hex()
        server_auth = where / "server.xauth"
        self.xauthority = where / "client.xauth"
        subprocess.run(["xauth", "-f", str(server_auth), "add", ":0", "MIT-MAGIC-COOKIE-1", cookie],
                       check=True, capture_output=True)
        super().__init__("-auth", str(server_auth), *extra)
        subprocess.run(["xauth", "-f", str(self.xauthority), "add", ":%d" % self.number,
                        "MIT-MAGIC-COOKIE-1", cookie], check=True, capture_output=True)

    def env(self, display):
        return {"DISPLAY": display, "XAUTHORITY": str(self.xauthority)}


def cookie_x(tmp_path, *extra):
    """A CookieXvfb for one test, its files under TMP_PATH/x, stopped after it."""
    (tmp_path / "x").mkdir()
    server = CookieXvfb(tmp_path / "x", *extra)
    yield server
    server.stop()


@pytest.fixture
def local_x(tmp_path):
    yield from cookie_x(tmp_path, "-nolisten", "tcp")


@pytest.fixture
def tcp_x(tmp_path):
    yield from cookie_x(tmp_path, "-listen", "tcp")


# ---- the harness inside and outside -------------------------------------------------------

def harness_argv(root, frames, *options):
    return [PYTHON, os.path.join(root, HARNESS), "--frames", str(frames)] + list(options)


def run_args(trace, marker="usb.out:0x02"):
    return ["run", "--frame", marker, "--trace", trace, "--"]


def harness_inside(cwd, trace_name, frames, *options, env=None, run_options=(), device=True,
                   marker="usb.out:0x02"):
    """The Python harness in the container, on the image's emulated camera (DEVICE), recorded
    by the installed nvtxshim run into /work/TRACE_NAME."""
    camera = [INSIDE + "/build/emucam", "--"] if device else []
    argv = ["nvtxshim"] + run_args("/work/" + trace_name, marker) + camera + \
        harness_argv(INSIDE, frames, *options)
    return in_container(argv, cwd, options=run_options, env=env)


def harness_outside(cwd, trace_name, frames, *options, env=None, device=True, marker="usb.out:0x02"):
    """The same run outside: this checkout's harness, the build's emulated camera and command."""
    camera = [program("emucam"), "--"] if device else []
    argv = [program("nvtxshim")] + run_args(str(cwd / trace_name), marker) + camera + \
        harness_argv(ROOT, frames, *options)
    return subprocess.run(argv, cwd=str(cwd), env=clean_env(env), stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=TIMEOUT_S)


def harness_lines(result, frames):
    """The harness's first two lines (what it ran on, and the summary, which does not depend
    on timing); the third is its frame rate."""
    lines = lines_of(ok(result))
    assert len(lines) == 3 and lines[2].startswith("fps="), lines
    assert lines[1].startswith("frames=%d errors=0 " % frames), lines
    return lines[:2]


def counted(events, domains):
    """{(domain, name): count} of the trace's ranges in DOMAINS: each name carries its call's
    endpoint or request and its bytes (libusb_bulk_transfer ep=0x81 IN 9216B)."""
    return collections.Counter((e["cat"], e["name"]) for e in ranges(events) if e["cat"] in domains)


def display_calls(events, frames):
    """The trace's x11 ranges counted by name, less the event queue's: each frame of a harness
    drains the queue (while XPending: XNextEvent), and how many events the server has sent by
    then (Expose, MapNotify...) is the scheduler's, not the program's. What stays is the queue's
    own count: every frame's drain ends with one XPending that found none, so there is one
    XPending a frame more than XNextEvents."""
    calls = counted(events, ("x11",))
    pending, taken = calls.pop(("x11", "XPending"), 0), calls.pop(("x11", "XNextEvent"), 0)
    assert pending - taken == frames, (pending, taken, frames)
    return calls


def frame_count(events):
    return len([e for e in ranges(events, "nvtxshim") if re.match(r"frame \d+$", e["name"])])


def marks(events, domain):
    return [e["name"] for e in events if e.get("ph") == "i" and e.get("cat") == domain]


# ---- the image's command, check, run.sh's engines -----------------------------------------

def test_the_images_command_is_make_demo_and_it_reports(tmp_path):
    """The image's own command (no COMMAND to run.sh): make -C /opt/libnvtxshim demo, with its
    programs built in the image, nsys from the image's packages, the GUI on a private Xvfb
    inside. DEMO_* as test/test_demo.py sets them, the results under the mounted directory."""
    variables = dict(DEMO_OUT="/work/demo", DEMO_FRAMES=str(DEMO_FRAMES), DEMO_FPS="0", DEMO_TIMEOUT="240",
                     DEMO_FINISH_TIMEOUT="60")
    command = [RUN_SH, "--engine", ENGINE, "--image", IMAGE, "--no-gpu", "--no-x11"] + \
        ["--docker-opt=--env=%s=%s" % item for item in variables.items()]
    result = ok(run_nsys(command, [str(tmp_path / "demo" / "report.nsys-rep")], total_s=240,
                         cwd=str(tmp_path), env=clean_env(), stdin=subprocess.DEVNULL,
                         timeout=1200))
    output = result.stdout.decode()
    # make demo's first step is deps.sh: everything is in the image already.
    assert "deps: all present" in output, output[:3000]
    assert "no GPU here: the CUDA calls go to the test stand-in driver" in output
    # What test/test_demo.py asserts of the same demo outside: the USB rig's report of the
    # frames nsys recorded (frames 10-13), the camera rig's trace of all 24.
    assert "nsys records frames 10-13 (--capture frames:10+4)" in output
    usb_rig, camera_rig = parts(output)
    check_report(usb_rig, 4, "10-13")
    check_camera_rig(camera_rig)
    # The report, the pages and the camera rig's trace landed outside, and read there.
    for name in ("report.nsys-rep", "report.html", "rig.json", "rig.html"):
        assert (tmp_path / "demo" / name).exists(), name
    assert "== page: /work/demo/report.html" in output and "== page: /work/demo/rig.html" in output
    outside = report_json(tmp_path / "demo" / "rig.json", tmp_path)
    assert the_process(outside)["frames"] == DEMO_FRAMES
    assert name_counts(outside, ("v4l2",))[("v4l2", "VIDIOC_DQBUF /dev/video0")] == DEMO_FRAMES


def test_check_in_the_container_says_so_and_finds_the_installed_library(tmp_path):
    result = in_container(["nvtxshim", "check"], tmp_path)
    lines = lines_of(result)
    said = [line for line in lines if "in a container" in line]
    expected = "OK   in a container (%s)" % ("podman: /run/.containerenv" if ENGINE == "podman"
                                             else "docker: /.dockerenv")
    assert len(said) == 1 and said[0].startswith(expected), lines
    [library] = [line for line in lines if line.startswith("OK   library ")]
    assert library.startswith("OK   library /usr/local/lib/libnvtxshim.so ("), lines
    # nsys from the image's packages (deps.sh), with its report importer.
    assert [line for line in lines if re.match(r"OK   nsys \d", line)], lines
    assert not [line for line in lines if line.startswith("FAIL")], lines
    assert lines[-1].startswith("nvtxshim check: profiling can proceed"), lines
    assert result.returncode == 0
    # The installed command and library are make's own (what make demo runs).
    ok(in_container(["sh", "-c", "cmp /usr/local/bin/nvtxshim %s/build/nvtxshim && "
                     "cmp /usr/local/lib/libnvtxshim.so %s/build/libnvtxshim.so" % (INSIDE, INSIDE)],
                    tmp_path))


def engines():
    """The container commands here: podman, and every `docker` on PATH that is podman-docker's
    or a docker whose daemon answers. (name, path)."""
    found = []
    if shutil.which("podman"):
        found.append(("podman", shutil.which("podman")))
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        path = os.path.join(directory, "docker")
        if not os.access(path, os.X_OK) or any(os.path.samefile(path, p) for _, p in found):
            continue
        version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
        if "podman" in version.stdout.lower() or "podman" in version.stderr.lower() or \
                subprocess.run([path, "info"], capture_output=True, timeout=60).returncode == 0:
            found.append(("docker", path))
    return found


@pytest.mark.parametrize("kind", ["podman", "docker"])
def test_run_sh_with_docker_and_with_podman(tmp_path, kind):
    """run.sh with each engine: the working directory is /work, what is written there is here,
    and the image's command is the installed one. podman-docker's `docker` counts as docker
    (podman's storage holds the image for both); Docker's own daemon, where make test-container
    ran on it. An engine without the image is skipped, saying so."""
    found = [path for found_kind, path in engines() if found_kind == kind and
             subprocess.run([path, "image", "inspect", IMAGE], capture_output=True,
                            timeout=120).returncode == 0]
    if not found:
        assert kind != ENGINE, "the engine the image was built with (%s) was not found" % ENGINE
        pytest.skip("no %s here that holds the image %s (make test-container built it with %s)"
                    % (kind, IMAGE, ENGINE))
    version = ok(subprocess.run([program("nvtxshim"), "--version"], capture_output=True)).stdout
    for path in found:
        where = tmp_path / os.path.basename(os.path.dirname(path))
        where.mkdir(exist_ok=True)
        result = ok(in_container(["sh", "-c", "pwd; nvtxshim --version > version.txt"], where,
                                 engine=path))
        assert lines_of(result) == ["/work"], path
        assert (where / "version.txt").read_bytes() == version, path
        dry = ok(subprocess.run([RUN_SH, "--engine", path, "--image", IMAGE, "--no-gpu", "-n", "--",
                                 "true"], cwd=str(where), env=clean_env(), capture_output=True))
        assert dry.stdout.decode().startswith("%s run --rm --init -i " % path), dry.stdout


# ---- X11 forwarding -------------------------------------------------------------------------

def test_the_harness_window_inside_draws_on_the_display_outside(tmp_path, local_x):
    """DISPLAY=:N of an Xvfb outside: run.sh mounts its socket and a copy of its cookie (the
    server admits nobody without it). The Python harness's window inside draws there: the same
    frames, the same X11 calls as the same run outside, and report's x11 column has time."""
    display = ":%d" % local_x.number
    env = local_x.env(display)
    inside = harness_lines(harness_inside(tmp_path, "inside.json", FRAMES, "--use_gui=1", env=env),
                           FRAMES)
    outside = harness_lines(harness_outside(tmp_path, "outside.json", FRAMES, "--use_gui=1",
                                            env=env), FRAMES)
    # gui=xlib: the window opened (without the display or the cookie it says gui=off).
    assert inside[0].endswith("; gui=xlib") and inside == outside, (inside, outside)
    assert inside[1] == expected_summary(FRAMES, 0, inside[1])
    events_in, events_out = load_trace(tmp_path / "inside.json"), load_trace(tmp_path / "outside.json")
    assert frame_count(events_in) == frame_count(events_out) == FRAMES
    x11_in = display_calls(events_in, FRAMES)
    assert x11_in[("x11", "XPutImage %dx%d" % (64 * 4, 48 * 4))] == FRAMES, x11_in
    assert x11_in == display_calls(events_out, FRAMES)
    assert collections.Counter(names(events_in, "usb")) == usb_names(FRAMES)
    # A local display with MIT-SHM (run.sh's --ipc=host) has no warning mark, in or out.
    assert marks(events_in, "x11") == marks(events_out, "x11") == []
    document = report_json(tmp_path / "inside.json", tmp_path)
    columns = the_process(document)["columns"]
    assert the_process(document)["frames"] == FRAMES
    assert "x11" in columns and columns["x11"]["max"] > 0, columns

    # The C harness draws with MIT-SHM: its segment reaches the server outside (--ipc=host).
    frames = 4
    c_harness = ["--", "emucam", "--", "harness_physical", "--frames", str(frames), "--use_gui=1"]

    def c_argv(build, trace):
        stub, tools = os.path.join(build, "test", "stub"), [os.path.join(build, word)
                                                           if word in ("emucam", "harness_physical")
                                                           else word for word in c_harness]
        return ["env", "LD_LIBRARY_PATH=" + stub] + \
            [os.path.join(build, "nvtxshim") if build != INSIDE + "/build" else "nvtxshim",
             "run", "--frame", "usb.out:0x02", "--trace", trace] + tools

    result = in_container(c_argv(INSIDE + "/build", "/work/c-inside.json"), tmp_path, env=env)
    c_inside = lines_of(ok(result))
    c_outside = lines_of(ok(subprocess.run(c_argv(os.path.dirname(program("nvtxshim")),
                                                  str(tmp_path / "c-outside.json")),
                                           cwd=str(tmp_path), env=clean_env(env), capture_output=True,
                                           timeout=TIMEOUT_S)))
    assert c_inside[0].endswith("; gui=xshm") and c_inside[:2] == c_outside[:2], (c_inside, c_outside)
    events_in, events_out = load_trace(tmp_path / "c-inside.json"), load_trace(tmp_path / "c-outside.json")
    x11_in = display_calls(events_in, frames)
    assert x11_in == display_calls(events_out, frames)
    assert sum(count for (_, name), count in x11_in.items() if name.startswith("XShmPutImage")) == frames, x11_in
    assert marks(events_in, "x11") == marks(events_out, "x11") == []


def test_a_tcp_display_inside_is_flagged_remote_as_outside(tmp_path, tcp_x):
    """ssh -X's kind of display, DISPLAY=localhost:N (TCP port 6000+N on the host's loopback):
    run.sh takes the host's network for it, and the library marks it remote, inside as outside."""
    display = "localhost:%d" % tcp_x.number
    env = tcp_x.env(display)
    frames = 4
    result = harness_inside(tmp_path, "inside.json", frames, "--use_gui=1", env=env)
    assert "using --network host" in result.stderr.decode(), result.stderr
    inside = harness_lines(result, frames)
    outside = harness_lines(harness_outside(tmp_path, "outside.json", frames, "--use_gui=1", env=env),
                            frames)
    assert inside[0].endswith("; gui=xlib") and inside == outside, (inside, outside)
    events_in, events_out = load_trace(tmp_path / "inside.json"), load_trace(tmp_path / "outside.json")
    flag = "remote X display %s (TCP): round trips cross the network, no MIT-SHM" % display
    assert marks(events_in, "x11") == marks(events_out, "x11") == [flag]
    assert frame_count(events_in) == frame_count(events_out) == frames
    assert display_calls(events_in, frames) == display_calls(events_out, frames)
    document = report_json(tmp_path / "inside.json", tmp_path)
    assert [m["examples"][0]["text"] for m in document["marks"] if m["domain"] == "x11"] == [flag]


# ---- devices from outside -------------------------------------------------------------------

class CameraOutside:
    """build/emucam outside, holding its test bed (umockdev's directory) open for a program in
    the container: a shell under emucam says the directory and waits for a line on stdin."""

    def __init__(self):
        self.process = subprocess.Popen(
            [program("emucam"), "--", "sh", "-c", 'echo "$UMOCKDEV_DIR"; echo "$LD_PRELOAD"; read done'],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env())
        self.directory = self.process.stdout.readline().decode().strip()
        self.preload = self.process.stdout.readline().decode().strip()
        assert os.path.isdir(self.directory), (self.directory, self.process.communicate(timeout=30))

    def end(self):
        """emucam's exit status and what it said (nothing when no command broke its protocol)."""
        out, err = self.process.communicate(b"\n", timeout=60)
        return self.process.returncode, err


def test_the_emulated_camera_outside_reaches_the_harness_inside(tmp_path):
    """umockdev's test bed mounted in at its path, UMOCKDEV_DIR and its preload library set: the
    harness inside opens 1209:0001 and talks to the emucam running outside. Its trace has
    every transfer, endpoint and byte count of the same run outside, on a camera of its own."""
    camera = CameraOutside()
    try:
        # umockdev's preload library first (the image's, at the same name), as emucam sets it.
        assert camera.preload == "libumockdev-preload.so.0", camera.preload
        options = ["--volume=%s:%s" % (camera.directory, camera.directory),
                   "--env=UMOCKDEV_DIR=%s" % camera.directory, "--env=LD_PRELOAD=" + camera.preload]
        inside = harness_lines(harness_inside(tmp_path, "inside.json", FRAMES, run_options=options,
                                              device=False), FRAMES)
    finally:
        status, said = camera.end()
    assert status == 0 and said == b"", (status, said)
    outside = harness_lines(harness_outside(tmp_path, "outside.json", FRAMES), FRAMES)
    assert inside == outside and inside[0].startswith(
        "harness_physical.py: %d frames of 64x48 from 1209:0001; usb=sync;" % FRAMES), (inside, outside)
    events_in, events_out = load_trace(tmp_path / "inside.json"), load_trace(tmp_path / "outside.json")
    assert counted(events_in, ("usb",)) == counted(events_out, ("usb",))
    assert collections.Counter(names(events_in, "usb")) == usb_names(FRAMES)
    reads = [e["args"]["payload"] for e in ranges(events_in, "usb")
             if e["name"] == "libusb_bulk_transfer ep=0x81 IN 9216B"]
    assert reads == [9216] * FRAMES
    assert frame_count(events_in) == frame_count(events_out) == FRAMES


class ServoOutside:
    """examples/emuservo.py outside on a pty; it says the pty's path once it is ready."""

    def __init__(self):
        self.process = subprocess.Popen([PYTHON, os.path.join(ROOT, EMUSERVO), "--timeout", "120"],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env())
        self.path = self.process.stdout.readline().decode().strip()
        assert self.path.startswith("/dev/pts/"), (self.path, self.process.communicate(timeout=30))

    def end(self, client):
        """What the servo said once its CLIENT (a finished run) closed the port; a client that
        failed may never have opened it, and the servo would wait for one: it is stopped."""
        if client is None or client.returncode != 0:
            self.process.kill()
        out, err = self.process.communicate(timeout=150)
        return out.decode(), err


def rig_events(events):
    """The camera's and the serial port's ranges by (domain, name), the port's path as PORT.
    A select is counted once however often it was made: how many waits returned before the
    frame or the reply came is the scheduler's (9 against 8 in one loaded run); that the rig
    waited on each device stays."""
    found = collections.Counter()
    for (domain, name), count in counted(events, ("v4l2", "serial")).items():
        name = re.sub(r"/dev/(pts/\d+|ttyUSB0)", "PORT", name)
        found[(domain, name)] = 1 if name.startswith("select ") else found[(domain, name)] + count
    return found


def test_the_camera_double_and_a_serial_port_outside_reach_the_rig_inside(tmp_path):
    """The harness as a camera rig: V4L2 frames from the camera double (preloaded in the
    container as outside), actions written to a servo outside through its pty, mounted in as
    /dev/ttyUSB0. The trace inside has the ioctls, reads and writes, with their bytes, of the
    same rig outside; the servo answered every frame both times."""
    frames = 8
    camera = dict(EMUV4L2_DEVICE="/dev/video0", EMUV4L2_FORMAT="YUYV:160x120", EMUV4L2_NOBUF="wait")
    rig = ["--camera", "v4l2:/dev/video0", "--actuator"]

    def argv(root, port, trace):
        return ["run", "--frame", "v4l2.in", "--devices", port, "--trace", trace, "--",
                "sh", "-c", 'LD_PRELOAD="$LD_PRELOAD:$0" exec "$@"',
                os.path.join(root, "build", "test", "libemuv4l2.so") if root == INSIDE else
                program("test/libemuv4l2.so")] + harness_argv(root, frames, *rig, "serial:" + port)

    servo, result = ServoOutside(), None
    try:
        options = ["--volume=%s:/dev/ttyUSB0" % servo.path] + \
            ["--env=%s=%s" % item for item in camera.items()]
        result = in_container(["nvtxshim"] + argv(INSIDE, "/dev/ttyUSB0", "/work/inside.json"),
                              tmp_path, options=options)
    finally:
        said_in = servo.end(result)
    inside = harness_lines(result, frames)
    servo, result = ServoOutside(), None
    try:
        result = subprocess.run([program("nvtxshim")] + argv(ROOT, servo.path, str(tmp_path / "outside.json")),
                                cwd=str(tmp_path), env=clean_env(camera), capture_output=True,
                                timeout=TIMEOUT_S)
    finally:
        said_out = servo.end(result)
    outside = harness_lines(result, frames)
    assert said_in[0] == said_out[0] == "emuservo.py: answered %d commands\n" % frames, (said_in, said_out)
    assert "; actuator=serial:/dev/ttyUSB0;" in inside[0]
    assert inside[1] == outside[1], (inside, outside)
    events_in, events_out = load_trace(tmp_path / "inside.json"), load_trace(tmp_path / "outside.json")
    found = rig_events(events_in)
    assert found == rig_events(events_out)
    # A frame per camera buffer dequeued (--frame v4l2.in): OpenCV's own first read too.
    dequeued = found[("v4l2", "VIDIOC_DQBUF /dev/video0 160x120 RGB3")]
    assert dequeued >= frames and frame_count(events_in) == frame_count(events_out) == dequeued, found
    # One command a frame to the servo, "move F C\n", and its reply read a byte at a time.
    assert found[("serial", "write PORT 9B")] == frames, found
    assert found[("serial", "read PORT 1B")] == len("ok 0 0\n") * frames, found


# ---- nsys inside ----------------------------------------------------------------------------

PROFILE = ["profile", "--frame", "usb.out:0x02", "--timeout", "240", "--finish-timeout", "60",
           "--force"]


def test_a_profile_made_inside_is_read_outside(tmp_path):
    """nvtxshim profile in the container (the image's nsys): its report lands in the mounted
    directory, and nvtxshim report outside reads it (exported again by the nsys here), with
    the frames and the calls of the same profile made outside."""
    inside_report = tmp_path / "inside.nsys-rep"
    argv = ["nvtxshim"] + PROFILE + ["--output", "/work/inside", "--", INSIDE + "/build/emucam", "--"] + \
        harness_argv(INSIDE, FRAMES)
    command = [RUN_SH, "--engine", ENGINE, "--image", IMAGE, "--no-gpu", "--"] + argv
    result = ok(run_nsys(command, [str(inside_report)], total_s=240, cwd=str(tmp_path), env=clean_env(),
                         stdin=subprocess.DEVNULL, timeout=1200))
    assert "frames=%d errors=0" % FRAMES in result.stdout.decode()
    # What the container exported is set aside: the report is read from the .nsys-rep alone.
    os.unlink(tmp_path / "inside.sqlite")
    inside = report_json(inside_report, tmp_path)
    assert (tmp_path / "inside.sqlite").exists()

    outside_report = tmp_path / "outside.nsys-rep"
    argv = [program("nvtxshim")] + PROFILE + ["--output", str(tmp_path / "outside"), "--",
                                              program("emucam"), "--"] + harness_argv(ROOT, FRAMES)
    ok(run_nsys(argv, [str(outside_report)], total_s=240, cwd=str(tmp_path), env=clean_env(),
                timeout=1200))
    outside = report_json(outside_report, tmp_path)
    assert the_process(inside)["frames"] == the_process(outside)["frames"] == FRAMES
    # The name is nsys's own, from its look at the process: under load a run of a few tens of
    # milliseconds can end unseen (seen beside two busy processes: PROCESSES and ThreadNames
    # named the container's sh and emucam, not the harness), and the report then has none.
    assert the_process(inside)["name"] in (the_process(outside)["name"], None)
    counts = name_counts(inside, ("usb", "nvtxshim"))
    assert counts == name_counts(outside, ("usb", "nvtxshim"))
    assert counts[("nvtxshim", "frame N")] == FRAMES, counts
    assert sum(count for (domain, _), count in counts.items() if domain == "usb") == \
        sum(usb_names(FRAMES).values()), counts
