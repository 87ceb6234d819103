"""pytest plugin for the sanitizer run of the suite (make test-asan): a sanitizer
report in the output of any program a test ran fails that test, whatever the
test itself looks at.

Reports cannot go to files (log_path): ASan creates the log's directory with
mkdir() while it starts, and in a program under build/emucam that mkdir is
umockdev's preload wrapper, not yet initialised then (a crash at address 0).
So they go to stderr, which every test captures, and this plugin reads it."""
import subprocess

import pytest

MARKERS = (b"ERROR: AddressSanitizer", b"ERROR: LeakSanitizer", b"runtime error:",
           b"WARNING: ThreadSanitizer", b"ERROR: UndefinedBehaviorSanitizer")

reports = []
_communicate = subprocess.Popen.communicate


def _checked_communicate(self, *args, **kwargs):
    out, err = _communicate(self, *args, **kwargs)
    for stream in (out, err):
        data = stream.encode(errors="replace") if isinstance(stream, str) else stream
        if data and any(marker in data for marker in MARKERS):
            reports.append("%s\n%s" % (self.args, data.decode(errors="replace")))
    return out, err


subprocess.Popen.communicate = _checked_communicate


_seen = pytest.StashKey[int]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item.stash[_seen] = len(reports)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    seen = item.stash.get(_seen, 0)
    if report.when == "call" and len(reports) > seen:
        report.outcome = "failed"
        report.longrepr = "sanitizer report(s):\n" + "\n".join(reports[seen:])
        item.stash[_seen] = len(reports)
