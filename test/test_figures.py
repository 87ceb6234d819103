"""The figures builder (cli/model/figures_builder.c) at its limits, in a build of its own with small ones
(test/unit/test_figures.c): sketched p50/p99 within the stated error, calls exact while their
frame is open and counted late (and said) after, marks past the texts told apart."""
import subprocess

from conftest import program


def test_figures_at_their_limits():
    result = subprocess.run([program("test/test_figures")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.endswith(" 0 failed\n"), result.stdout
