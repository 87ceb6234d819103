"""Configuration: the parser's unit tests, and what a user sees for bad values."""
import os
import re
import subprocess

import pytest

from conftest import clean_env, load_trace, program, run
from variables import ROOT, variables


def test_config_parser_unit_tests():
    result = subprocess.run([program("test/test_config")], env=clean_env(), capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 failed" in result.stdout


@pytest.mark.parametrize("name", ["test_error_names", "test_error_names_before_2_32"])
def test_errors_are_named_with_and_without_glibc_2_32s_names(name):
    """The messages name an error as glibc does, also built where glibc predates strerrorname_np
    (the wheel, for glibc 2.28): then from the library's own table, each name checked against
    glibc's."""
    result = subprocess.run([program("test/" + name)], env=clean_env(), capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 failed" in result.stdout


def test_help_prints_the_reference_and_the_program_runs_on():
    result = run(["/bin/echo", "hello"], env={"NVTXSHIM_HELP": "1"})
    assert result.stdout == b"hello\n"
    assert result.returncode == 0
    names = [line.split()[0] for line in result.stderr.decode().splitlines()[1:] if line[2] != " "]
    assert names == [name for name, _, _ in variables()]


def test_the_user_guide_describes_every_variable_in_its_table():
    with open(os.path.join(ROOT, "docs", "user-guide.md")) as f:
        table = re.findall(r"^\| `(NVTXSHIM_\w+)` \|", f.read(), re.M)
    assert table == [name for name, _, _ in variables()]


def test_each_bad_variable_gets_one_line_and_the_program_output_is_unchanged(make_device):
    device = make_device(frames=3)
    bad = {"NVTXSHIM_FRAME": "usb.inn", "NVTXSHIM_FRAME_BUDGET": "33", "NVTXSHIM_CAPTURE": "frames:0",
           "NVTXSHIM_LOG": "loud", "NVTXSHIM_FRAMES": "usb.in"}
    argv = [program("usb_capture"), "--frames", "3"]
    plain = run(argv, shim=False, device=device)
    shimmed = run(argv, env=bad, device=device)
    assert shimmed.returncode == plain.returncode == 0
    assert shimmed.stdout == plain.stdout
    lines = shimmed.stderr.decode().splitlines()
    assert all(line.startswith("nvtxshim: ") for line in lines), lines
    assert len(lines) == len(bad), lines
    for variable, value in bad.items():
        matching = [line for line in lines if variable + "=" in line or variable + " " in line]
        assert len(matching) == 1, (variable, lines)
    frame_line = next(line for line in lines if "NVTXSHIM_FRAME='usb.inn'" in line)
    assert "usb.in[:EP]" in frame_line and "call:NAME" in frame_line


def test_a_bad_variable_in_a_process_without_hooked_libraries_stays_silent():
    result = run(["/bin/true"], env={"NVTXSHIM_FRAME": "usb.inn"})
    assert result.returncode == 0
    assert result.stderr == b""


def _control_free(stderr):
    """STDERR's lines, after checking that no byte of it is a control character but the
    newlines that end its lines: a value echoed raw (a newline, an escape sequence) shows."""
    assert stderr.endswith(b"\n") or stderr == b"", stderr
    controls = [c for c in stderr if (c < 0x20 and c != 0x0a) or c == 0x7f]
    assert not controls, stderr
    return stderr.decode(errors="replace").splitlines()


# Values with control characters, each with the variables that must get one line (their value
# escaped in it) and what else must be said. Besides their own line, the capture range's name
# is printed in the nsys options line, the trace path in the trace writer's lines, and a bad
# NVTXSHIM_HOOKS in the line about a frame marker whose calls it leaves untraced.
ESCAPED = {
    "capture-name": ({"NVTXSHIM_CAPTURE_NAME": "grab\n\x1b[2J@rig",
                      "NVTXSHIM_CAPTURE": "calls:libusb_bulk_transfer:1"},
                     {"NVTXSHIM_CAPTURE_NAME": r"'grab\n\x1b[2J@rig'"},
                     "-p capture@nvtxshim"),
    "trace": ({"NVTXSHIM_TRACE": "/nonexistent/\x1b[31mred\n%p.json"},
              {"NVTXSHIM_TRACE": r"'/nonexistent/\x1b[31mred\n%p.json'"}, None),
    "hooks-echoed": ({"NVTXSHIM_HOOKS": "usb\x1b[31m", "NVTXSHIM_FRAME": "usb.in"},
                     {"NVTXSHIM_HOOKS": r"'usb\x1b[31m'"},
                     r"NVTXSHIM_FRAME=usb.in counts usb calls, but NVTXSHIM_HOOKS=usb\x1b[31m leaves"),
}


@pytest.mark.parametrize("case", sorted(ESCAPED))
def test_no_message_prints_a_value_raw(make_device, case):
    env, bad, said = ESCAPED[case]
    device = make_device(frames=3)
    argv = [program("usb_capture"), "--frames", "3"]
    plain = run(argv, shim=False, device=device)
    shimmed = run(argv, env=env, device=device)
    assert (shimmed.stdout, shimmed.returncode) == (plain.stdout, plain.returncode)
    lines = _control_free(shimmed.stderr)
    assert all(line.startswith("nvtxshim: ") for line in lines), lines
    for variable, value in bad.items():
        matching = [line for line in lines if line.startswith("nvtxshim: %s=%s is not valid" %
                                                               (variable, value))]
        assert len(matching) == 1 and "(accepted: " in matching[0], (variable, lines)
        assert "no control characters" in matching[0] or "without control characters" in \
            matching[0] or variable == "NVTXSHIM_HOOKS", matching
    if said:
        assert any(said in line for line in lines), lines


GLOBS = [("NVTXSHIM_DEVICES", "/dev/tty[", "a '[' without its ']'"),
         ("NVTXSHIM_DEVICES", "/dev/pts/*,/dev/ttyUSB[0-", "'/dev/ttyUSB[0-': a '[' without its ']'"),
         ("NVTXSHIM_DEVICES", "/dev/i2c-[9-0]", "from a higher character to a lower one"),
         ("NVTXSHIM_DEVICES", "/dev/[a/b]", "a '/' inside [...]"),
         ("NVTXSHIM_FRAME", "serial.in:/dev/tty[", "a '[' without its ']'"),
         ("NVTXSHIM_FRAME", "v4l2.in:/dev/video[", "a '[' without its ']'"),
         ("NVTXSHIM_FRAME", "hid.out:/dev/hidraw[1-0]", "from a higher character to a lower one")]


@pytest.mark.parametrize("variable, value, why", GLOBS, ids=[v for _, v, _ in GLOBS])
def test_a_malformed_glob_gets_one_line_and_the_program_runs_on(make_device, variable, value, why):
    # devices/table.c matches a '[' without its ']' as a plain '[': /dev/tty[ would name a file
    # no one has, silently. The glob is refused instead, with the accepted forms.
    device = make_device(frames=3)
    argv = [program("usb_capture"), "--frames", "3"]
    plain = run(argv, shim=False, device=device)
    shimmed = run(argv, env={variable: value}, device=device)
    assert (shimmed.stdout, shimmed.returncode) == (plain.stdout, plain.returncode)
    lines = _control_free(shimmed.stderr)
    assert len(lines) == 1, lines
    start = "nvtxshim: %s='%s' is not valid: " % (variable, value)
    assert lines[0].startswith(start) and why in lines[0].split(" (accepted: ")[0], lines
    assert "closed by its ]" in lines[0]
    assert lines[0].endswith("; frame counting stays off" if variable == "NVTXSHIM_FRAME" else
                             "; only device files found by kind are traced"), lines


def test_a_devices_list_with_a_malformed_glob_traces_none_of_its_paths(tmp_path):
    # The whole list is off, not just its bad entry: /dev/null, named beside it, is not traced;
    # named alone, it is (the control).
    def traced(devices):
        where = tmp_path / str(len(os.listdir(tmp_path)))
        where.mkdir()
        result = run(["sh", "-c", "echo hi >/dev/null; echo done"],
                     env={"NVTXSHIM_DEVICES": devices, "NVTXSHIM_TRACE": str(where / "t-%p.json")})
        assert result.stdout == b"done\n" and result.returncode == 0
        return [e["name"] for trace in sorted(where.iterdir()) for e in load_trace(str(trace))
                if e.get("cat") == "serial"]
    assert traced("/dev/null") == ["write /dev/null 3B"]
    assert traced("/dev/null,/dev/tty[") == []
