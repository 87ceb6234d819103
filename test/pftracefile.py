"""Runs test/pftrace_check.py on a .pftrace file and gives back its summary: for the tests
of the binary trace (test_trace_pftrace.py) and of the writer's safety in either form
(test_trace_safety.py). The checker runs in build/pyenv (scripts/pyenv.sh, run by make
test's deps): Debian's python3 has no protobuf 6."""
import json
import os
import subprocess

import pytest

from conftest import ROOT

PYENV = os.environ.get("NVS_PYENV", os.path.join(ROOT, "build", "pyenv"))
CHECKER = os.path.join(ROOT, "test", "pftrace_check.py")
# The checker's own time is not the library's, and no test measures it: this bound only ends
# a checker that would never end. It decodes a 10 MB file (the SIGTERM and fork runs write that
# much) in 30-40 s on a quiet two-core machine, and took over 60 s with two busy processes and
# a second suite beside it.
TIMEOUT = 1800


def pyenv_python():
    """build/pyenv's python; a failure that says why when make test did not make it."""
    python = os.path.join(PYENV, "bin", "python")
    if os.path.exists(python):
        return python
    failed = PYENV + ".failed"
    if os.path.exists(failed):
        with open(failed) as f:
            why = f.read().strip()
        pytest.fail("no %s: scripts/pyenv.sh failed: %s" % (PYENV, why))
    pytest.fail("no %s: make test makes it (scripts/deps.sh runs scripts/pyenv.sh); run "
                "scripts/pyenv.sh" % PYENV)


def check(path, *options, expect_problems=False):
    """pftrace_check.py's summary of PATH; with no problem unless EXPECT_PROBLEMS."""
    done = subprocess.run([pyenv_python(), CHECKER] + list(options) + [str(path)],
                          capture_output=True, timeout=TIMEOUT)
    assert done.returncode in (0, 1), "pftrace_check.py failed to run (%d): %s" % (
        done.returncode, done.stderr.decode(errors="replace")[-3000:])
    summary = json.loads(done.stdout)
    assert (done.returncode == 1) == bool(summary["problems"])
    if not expect_problems:
        assert summary["problems"] == [], "%s: %d problems:\n%s" % (
            path, len(summary["problems"]), "\n".join(summary["problems"][:20]))
    return summary
