"""The C sources follow the repository's .clang-format: clang-format changes nothing in
libnvtxshim/, cli/ or examples/ (the test programs and bench's are left as written)."""
import os
import shutil
import subprocess

import pytest

from conftest import ROOT

FOLDERS = ("libnvtxshim", "cli", "examples")


def c_sources():
    found = []
    for folder in FOLDERS:
        for where, _, files in os.walk(os.path.join(ROOT, folder)):
            found += [os.path.join(where, name) for name in files if name.endswith((".c", ".h"))]
    return sorted(found)


def unformatted(paths):
    """The paths clang-format would change, with its first complaint about each."""
    done = subprocess.run(["clang-format", "--style=file", "--dry-run", "--Werror"] + paths,
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    found = {}
    for line in done.stderr.splitlines():
        if ": error: code should be clang-formatted" in line:
            found.setdefault(os.path.relpath(line.split(":", 1)[0], ROOT), line)
    assert done.returncode == (1 if found else 0), done.stderr[-2000:]
    return found


@pytest.fixture(scope="module")
def clang_format():
    if not shutil.which("clang-format"):
        pytest.fail("clang-format is not installed: run make deps")


def test_every_c_file_follows_the_style(clang_format):
    paths = c_sources()
    assert len(paths) > 100
    assert unformatted(paths) == {}


def test_a_file_off_the_style_is_caught(clang_format, tmp_path):
    shutil.copy(os.path.join(ROOT, ".clang-format"), tmp_path / ".clang-format")
    bad = tmp_path / "bad.c"
    bad.write_text("int  f(void){return 1;}\n")
    done = subprocess.run(["clang-format", "--style=file", "--dry-run", "--Werror", str(bad)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "code should be clang-formatted" in done.stderr
