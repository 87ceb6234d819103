"""Configuration: the parser's unit tests, and what a user sees for bad values."""
import os
import re
import subprocess

from conftest import clean_env, program, run
from variables import ROOT, variables


def test_config_parser_unit_tests():
    result = subprocess.run([program("test/test_config")], env=clean_env(), capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 failed" in result.stdout


def test_help_prints_the_reference_and_the_program_runs_on():
    result = run(["/bin/echo", "hello"], env={"NVTXSHIM_HELP": "1"})
    assert result.stdout == b"hello\n"
    assert result.returncode == 0
    names = [line.split()[0] for line in result.stderr.decode().splitlines()[1:] if line[2] != " "]
    assert names == [name for name, _, _ in variables()]


def test_the_readme_describes_every_variable_in_its_table():
    with open(os.path.join(ROOT, "README.md")) as f:
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
