"""The house's sizes (docs/ARCHITECTURE.md, "Changing it"): scripts/sizes.py finds no C file
in cli/ or libnvtxshim/ over 1,000 lines and no function over 100 lines without a line right
above it that starts "One function:" and says why it is one. Each rule is also seen to catch
a file and a function made too long on purpose, and the marker to let a long function be."""
import os
import subprocess

import pytest

from conftest import ROOT

SCRIPT = os.path.join(ROOT, "scripts", "sizes.py")


def sizes(*folders, root=ROOT):
    return subprocess.run([SCRIPT, "--root", str(root)] + list(folders), capture_output=True, text=True,
                          timeout=120)


def test_the_command_has_no_file_or_function_too_long():
    done = sizes("cli")
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_the_library_has_no_file_or_function_too_long():
    done = sizes("libnvtxshim")
    assert done.returncode == 0 and done.stderr == "", done.stderr


def function(name, body_lines, above=""):
    body = "".join("    x += %d;\n" % i for i in range(body_lines))
    return "%sstatic int %s(int x,\n             int y)\n{\n%s    return x + y;\n}\n" % (above, name, body)


def test_a_function_over_100_lines_is_caught(tmp_path):
    (tmp_path / "cli" / "model").mkdir(parents=True)
    (tmp_path / "cli" / "model" / "long.c").write_text(
        function("short_one", 97) + "\n" + function("long_one", 98))
    done = sizes("cli", root=tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stderr == ('cli/model/long.c:104: long_one is 101 lines, over 100, with no "One function:" '
                           "line above it saying why\n"), done.stderr


def test_a_long_function_with_its_reason_above_passes(tmp_path):
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "long.c").write_text(
        function("long_one", 150, "/* The sum of many terms.\n * One function: a table read top to bottom. */\n"))
    done = sizes("cli", root=tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    # the reason must be right above it: a blank line between, and it counts for nothing
    (tmp_path / "cli" / "long.c").write_text(
        function("long_one", 150, "/* One function: a table read top to bottom. */\n\n"))
    assert sizes("cli", root=tmp_path).returncode == 1


def test_a_file_over_1000_lines_is_caught(tmp_path):
    (tmp_path / "libnvtxshim").mkdir()
    (tmp_path / "libnvtxshim" / "big.h").write_text("/* a line */\n" * 1001)
    done = sizes("libnvtxshim", root=tmp_path)
    assert done.returncode == 1
    assert done.stderr == "libnvtxshim/big.h: 1001 lines, over 1000: split it along a seam\n", done.stderr
    (tmp_path / "libnvtxshim" / "big.h").write_text("/* a line */\n" * 1000)
    assert sizes("libnvtxshim", root=tmp_path).returncode == 0
