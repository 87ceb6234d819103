"""Everywhere inert: the shim is inherited by every process under LD_PRELOAD, so any program
must run exactly as it runs without it. Programs from /usr/bin, picked at run time, each run with
--version in a fresh empty directory (also its HOME), stdin from /dev/null, a short time limit:
those that end in time and print the same twice without the shim are then run with it - with a
trace file and frames configured too - and must print the same bytes on stdout and stderr and
exit with the same code, and leave no trace file (they make no hooked call).

Safety: set-user-ID and set-group-ID files are skipped, and so is a deny list of programs that
could act on the machine rather than print their version (power, init and service control, kill
and its relatives, X servers and sessions, editors, pagers, terminals, shells that read a
terminal, package managers, daemons and agents, nsys). Each run gets its own process group,
killed when it outlives its limit.

Run this file directly (/usr/bin/python3 test/test_inert_sweep.py) to see what was picked."""
import concurrent.futures
import fnmatch
import hashlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import SHIM, clean_env  # noqa: E402

BIN = "/usr/bin"
AT_LEAST = 200          # fewer compared programs than this: the sweep says too little to pass
WANTED = 260            # candidates are tried until this many are compared, so it stays quick
FIRST_LIMIT_S = 3       # a first run longer than this: the program is left out
SLOW_S = 0.4            # so is one that takes this long (Java, big Perl and Python tools)
SHIM_LIMIT_S = 60       # a program known to end: later runs only wait longer
WORKERS = 3

DENY = [
    # power, init, services, sessions, users
    "shutdown", "reboot", "halt", "poweroff", "init", "telinit", "runlevel", "service",
    "invoke-rc.d", "update-rc.d", "systemd*", "*ctl", "udevadm", "loginctl", "su", "sudo*",
    "login", "newgrp", "sg", "passwd", "chsh", "chfn", "chage", "gpasswd", "expiry", "vipw",
    "vigr", "pkexec", "run-parts", "start-stop-daemon", "switch_root", "pivot_root", "chroot",
    # signals
    "kill", "killall", "pkill", "skill", "snice", "pidwait", "xkill", "fuser",
    # X servers, sessions, terminals, anything that opens windows or browsers
    "X", "Xorg", "Xvfb", "Xephyr", "Xnest", "Xwayland", "xvfb-run", "xinit", "startx",
    "x-*", "xdg-*", "*term", "*terminal*", "www-browser", "sensible-*", "see", "edit",
    "compose", "print", "run-mailcap", "display*",
    # editors, pagers, interactive and terminal programs
    "vi", "vim*", "view", "rview", "ex", "rvim", "nano", "pico", "ed", "red", "emacs*", "editor",
    "sensible-editor", "pager", "less", "lesspipe", "more", "most", "pg", "man", "info",
    "top", "htop", "watch", "screen", "tmux", "script", "scriptlive", "scriptreplay", "mesg",
    "wall", "write", "talk", "reset", "tset", "setterm", "chvt", "openvt", "deallocvt",
    "fgconsole", "setfont", "loadkeys", "kbd_mode", "setleds", "eject", "beep",
    # package and system management
    "apt*", "dpkg*", "debconf*", "update-*", "ucf*", "add-apt-repository", "pip*", "pam*",
    "crontab", "at", "atq", "atrm", "batch", "mail*", "sendmail",
    # daemons, agents, launchers and profilers that start them
    "*daemon*", "*-agent", "*agent", "dbus-*", "dirmngr*", "nsys*", "ncu*", "nvidia*",
    "pulseaudio", "gcloud", "gsutil", "bq", "anthoscli", "docker*", "podman*", "*server*",
    "*listener*", "*executor*", "faked*", "rxstack", "rxqueue", "watchgnupg", "scan-view",
    "dev_appserver*", "rmiregistry", "jstatd", "jconsole", "jshell", "jdb", "mvnDebug",
    "pkcon", "pkmon", "pkaction", "pkcheck",
    # scripts that act on the system or wait for a person
    "kernel-install", "deb-*", "dh_*", "pg_*", "activate-global-python-argcomplete",
    "select-editor", "tzselect", "luit", "tload", "grab_vcsa",
]


def denied(name):
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in DENY)


def candidates():
    """Executable regular files in /usr/bin, one name per distinct file, neither set-user-ID
    nor set-group-ID nor denied, in an order fixed by their names' hashes."""
    seen, picked = set(), []
    for name in sorted(os.listdir(BIN)):
        path = os.path.join(BIN, name)
        real = os.path.realpath(path)
        try:
            info = os.stat(real)
        except OSError:
            continue
        if (not stat.S_ISREG(info.st_mode) or not os.access(real, os.X_OK) or
                info.st_mode & (stat.S_ISUID | stat.S_ISGID) or denied(name) or
                denied(os.path.basename(real)) or real in seen):
            continue
        seen.add(real)
        picked.append(name)
    return sorted(picked, key=lambda name: hashlib.sha1(name.encode()).hexdigest())


def environment(home, shim, traces):
    """A fixed environment of its own, so that a program prints the same in every run (the
    test run's variables left out); with SHIM, the shim's settings too."""
    fixed = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME": home, "TMPDIR": home,
             "LC_ALL": "C", "LANG": "C", "TERM": "dumb", "COLUMNS": "80", "LINES": "24"}
    if shim:
        fixed.update(LD_PRELOAD=SHIM, NVTXSHIM_TRACE=os.path.join(traces, "t.%p.json"),
                     NVTXSHIM_FRAME="call:libusb_control_transfer")
    return clean_env(fixed, inherit=False)


def run_once(name, place, shim, traces, limit):
    """NAME --version in a fresh directory PLACE (also HOME): (stdout, stderr, exit code), or
    None when it outlived LIMIT (its whole process group is killed)."""
    shutil.rmtree(place, ignore_errors=True)
    os.makedirs(place)
    out_path, err_path = place + ".out", place + ".err"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        process = subprocess.Popen([os.path.join(BIN, name), "--version"], cwd=place,
                                   env=environment(place, shim, traces), stdin=subprocess.DEVNULL,
                                   stdout=out, stderr=err, start_new_session=True)
        try:
            code = process.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            code = None
        try:
            os.killpg(process.pid, signal.SIGKILL)  # anything it left running, too
        except ProcessLookupError:
            pass
        process.wait()
    with open(out_path, "rb") as out, open(err_path, "rb") as err:
        result = (out.read(), err.read(), code)
    shutil.rmtree(place, ignore_errors=True)
    return None if code is None else result


def try_program(name, base, traces):
    """('left out', why) or ('compared', plain, shimmed)."""
    place = os.path.join(base, name)
    started = time.monotonic()
    first = run_once(name, place, False, traces, FIRST_LIMIT_S)
    if first is None:
        return ("left out", "does not end in %d s" % FIRST_LIMIT_S)
    if time.monotonic() - started > SLOW_S:
        return ("left out", "slow")
    second = run_once(name, place, False, traces, SHIM_LIMIT_S)
    if second != first:
        return ("left out", "prints differently each run")
    shimmed = run_once(name, place, True, traces, SHIM_LIMIT_S)
    if shimmed != first:
        # Twice the same without the shim may still be luck (a clock that did not tick between
        # them, the free memory Debian's chromium wrapper prints): once more each way, and a
        # program that then agrees, or prints something new without the shim, was not
        # deterministic.
        again = run_once(name, place, False, traces, SHIM_LIMIT_S)
        if again != first or again == run_once(name, place, True, traces, SHIM_LIMIT_S):
            return ("left out", "prints differently each run")
    return ("compared", first, shimmed)


def sweep(wanted=WANTED):
    """Tries candidates, several at a time, until WANTED were compared; returns
    {name: outcome} for every program tried."""
    base = tempfile.mkdtemp(prefix="inert-sweep-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None)
    traces = os.path.join(base, "traces")
    os.makedirs(traces)
    outcomes, compared = {}, 0
    try:
        names = iter(candidates())
        with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
            running = {}
            while True:
                while len(running) < 2 * WORKERS and compared + len(running) < wanted:
                    name = next(names, None)
                    if name is None:
                        break
                    running[pool.submit(try_program, name, base, traces)] = name
                if not running:
                    break
                done, _ = concurrent.futures.wait(running, return_when=concurrent.futures.FIRST_COMPLETED)
                for future in done:
                    name = running.pop(future)
                    outcomes[name] = future.result()
                    compared += outcomes[name][0] == "compared"
        outcomes[None] = sorted(os.listdir(traces))  # trace files: there should be none
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return outcomes


def test_programs_from_usr_bin_run_the_same_with_the_shim():
    outcomes = sweep()
    traces = outcomes.pop(None)
    compared = {name: o for name, o in outcomes.items() if o[0] == "compared"}
    different = sorted(name for name, (_, plain, shimmed) in compared.items() if plain != shimmed)
    said = sorted(name for name, (_, _, shimmed) in compared.items() if b"nvtxshim" in shimmed[1])
    print("inert sweep: %d programs compared (%d tried)" % (len(compared), len(outcomes)))
    assert not different, "the shim changed these programs' output or exit code:\n%s" % "\n".join(
        "%s: without %r\n  with %r" % (name, compared[name][1], compared[name][2])
        for name in different)
    assert not said, "the shim spoke in: %s" % said
    assert traces == [], "trace files from programs that make no hooked call: %s" % traces
    assert len(compared) >= AT_LEAST, "only %d programs compared" % len(compared)


if __name__ == "__main__":
    results = sweep(int(sys.argv[1]) if len(sys.argv) > 1 else WANTED)
    trace_files = results.pop(None)
    for program_name, outcome in sorted(results.items()):
        if outcome[0] == "compared":
            verdict = "same" if outcome[1] == outcome[2] else "DIFFERENT"
            print("%-40s %s (exit %s)" % (program_name, verdict, outcome[1][2]))
        else:
            print("%-40s left out: %s" % (program_name, outcome[1]))
    print("trace files:", trace_files)
