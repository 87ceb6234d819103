"""Secure execution, the trace file's permissions and symbolic links, and the
kernel probe only on request."""
import os
import shutil
import stat
import subprocess
import tempfile

import pytest

from conftest import SHIM, clean_env, load_trace, program, ranges, run

NOBODY = 65534
LOUD = {"NVTXSHIM_HELP": "1", "NVTXSHIM_LOG": "debug", "NVTXSHIM_HOOKS": "nonsense"}


@pytest.fixture
def setuid_probe():
    """secure_probe and the library in a directory everyone can enter, the probe
    set-user-ID root; NOBODY runs it, so the loader marks it AT_SECURE."""
    if os.geteuid() != 0:
        pytest.skip("needs root to make a set-user-ID program")
    directory = tempfile.mkdtemp(prefix="nvs-secure-", dir="/tmp")
    try:
        os.chmod(directory, 0o755)
        probe = os.path.join(directory, "secure_probe")
        library = os.path.join(directory, "libnvtxshim.so")
        shutil.copy(program("test/secure_probe"), probe)
        shutil.copy(SHIM, library)
        os.chmod(library, 0o644)
        os.chmod(probe, 0o4755)
        yield directory, probe, library
    finally:
        shutil.rmtree(directory)


def run_as_nobody(argv, env):
    def drop():
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    return subprocess.run(argv, env=clean_env(env, inherit=False), capture_output=True, preexec_fn=drop, timeout=60)


def test_a_set_user_id_program_reads_no_variable_and_writes_no_file(setuid_probe):
    directory, probe, library = setuid_probe
    trace = os.path.join(directory, "secure.json")
    result = run_as_nobody([probe, library], dict(LOUD, NVTXSHIM_TRACE=trace))
    if b"secure=1" not in result.stdout:
        pytest.skip("no secure execution here (nosuid mount?): %r" % result.stdout)
    assert (result.stdout, result.stderr, result.returncode) == (
        b"secure_probe done, secure=1\n", b"", 0)
    assert not os.path.exists(trace)
    # The same program and variables without the set-user-ID bit: the help text
    # and a trace. What secure execution turned off was on. (The bad variable's
    # line waits for a hooked library, which this program has none of.)
    os.chmod(probe, 0o755)
    open_trace = os.path.join(directory, "open.json")
    os.chmod(directory, 0o777)
    result = run_as_nobody([probe, library], dict(LOUD, NVTXSHIM_TRACE=open_trace))
    assert result.stdout == b"secure_probe done, secure=0\n" and result.returncode == 0
    assert result.stderr.startswith(b"nvtxshim: configuration")  # NVTXSHIM_HELP
    assert [e["name"] for e in ranges(load_trace(open_trace))] == ["secure step"] * 3


def test_the_trace_file_gets_the_users_umask(tmp_path):
    trace = tmp_path / "masked.json"
    result = run(["sh", "-c", 'umask 027 && exec "$0"', program("test/nvtx_user")],
                 env={"NVTXSHIM_TRACE": str(trace)})
    assert result.returncode == 0 and result.stderr == b""
    assert stat.S_IMODE(os.stat(trace).st_mode) == 0o640
    result = run(["sh", "-c", 'umask 0 && exec "$0"', program("test/nvtx_user")],
                 env={"NVTXSHIM_TRACE": str(trace)})
    assert stat.S_IMODE(os.stat(trace).st_mode) == 0o640  # an existing file keeps its mode
    trace.unlink()
    run(["sh", "-c", 'umask 0 && exec "$0"', program("test/nvtx_user")],
        env={"NVTXSHIM_TRACE": str(trace)})
    assert stat.S_IMODE(os.stat(trace).st_mode) == 0o666


def test_a_symbolic_link_in_the_traces_place_is_not_followed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    trace = tmp_path / "planted.json"
    trace.symlink_to(victim)
    plain = run([program("test/nvtx_user")], shim=False)
    result = run([program("test/nvtx_user")], env={"NVTXSHIM_TRACE": str(trace)})
    assert (result.stdout, result.returncode) == (plain.stdout, plain.returncode)
    assert victim.read_text() == "keep me\n" and trace.is_symlink()
    lines = result.stderr.decode().splitlines()
    assert lines == ["nvtxshim: NVTXSHIM_TRACE: cannot write %s: it is a symbolic link; "
                     "no trace is recorded" % trace]


def test_the_kernel_probe_runs_only_on_request(make_device, tmp_path):
    # As root (where the probe could load), frames counted, no NVTXSHIM_KERNEL:
    # no kernel-domain event, no probe line.
    trace = tmp_path / "frames.json"
    argv = [program("usb_capture"), "--frames", "3"]
    result = run(argv, device=make_device(frames=3), env={
        "NVTXSHIM_TRACE": str(trace), "NVTXSHIM_FRAME": "usb.in"})
    assert result.returncode == 0 and result.stderr == b""
    events = load_trace(trace)
    assert any(e["name"].startswith("frame ") for e in events)
    assert not [e for e in events if e.get("cat") == "kernel"]
