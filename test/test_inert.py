"""In processes that never touch a hooked library the shim changes nothing and says nothing."""
import collections
import os
import subprocess

import pytest

from conftest import PYTHON, SHIM, clean_env, program, run

COMMANDS = [
    ["/bin/true"],
    ["/bin/false"],
    ["sh", "-c", "echo out; echo err >&2; exit 7"],
    [PYTHON, "-c", "import ctypes, sys; print(ctypes.CDLL(None).getpid() > 0); sys.exit(4)"],
]


# Settings with something to say - a bad value, an unknown variable, debug logging - and a
# trace, a capture and the kernel probe asked for: all wait for a hooked library, and these
# processes never load one.
SETTINGS = {"unset": {},
            "configured": {"NVTXSHIM_FRAME": "usb.inn", "NVTXSHIM_FRAMES": "usb.in",
                           "NVTXSHIM_LOG": "debug", "NVTXSHIM_CAPTURE": "signal:USR1",
                           "NVTXSHIM_KERNEL": "on"}}


@pytest.mark.parametrize("settings", sorted(SETTINGS))
@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: " ".join(a)[:30])
def test_same_output_exit_code_and_no_messages(argv, settings, tmp_path):
    plain = run(argv, shim=False)
    traces = tmp_path / "traces"
    traces.mkdir()
    env = dict(SETTINGS[settings])
    if env:
        env["NVTXSHIM_TRACE"] = str(traces / "t.%p.json")
    shimmed = run(argv, env=env)
    assert (shimmed.stdout, shimmed.stderr, shimmed.returncode) == (
        plain.stdout, plain.stderr, plain.returncode)
    assert os.listdir(traces) == []


def test_a_compiler_run_is_unchanged(tmp_path):
    source = tmp_path / "hello.c"
    source.write_text('#include <stdio.h>\nint main(void) { puts("hello"); return 5; }\n')
    build = run(["cc", str(source), "-o", str(tmp_path / "hello")])
    assert build.returncode == 0 and build.stderr == b""
    result = run([str(tmp_path / "hello")])
    assert (result.stdout, result.stderr, result.returncode) == (b"hello\n", b"", 5)


@pytest.mark.parametrize("order", ["probe-first", "shim-first"])
def test_another_preloaded_interposer_still_finds_rtld_next(order):
    # Our dlsym must keep glibc's view of the caller for RTLD_NEXT.
    from conftest import SHIM
    probe = program("test/libpreload_probe.so")
    preload = [probe, SHIM] if order == "probe-first" else [SHIM, probe]
    result = run([program("test/dlsym_next")], env={"LD_PRELOAD": ":".join(preload)}, shim=False)
    assert result.stdout == b"RTLD_NEXT found libc getpid\nRTLD_NEXT found libc close\nclose returned\n"
    assert result.returncode == 0


def test_an_interposer_after_the_library_gets_the_writes_through_its_indirect_function():
    # The libc hooks' real functions are read at load from the symbol tables of the objects
    # after the library (resolve.c); a name the first of them defines as something other than
    # a plain function is left to dlsym, which runs the indirect function's resolver. Read
    # past, the writes went to libc's write, around the interposer.
    first = os.environ.get("NVS_TEST_PRELOAD_FIRST")
    preload = ([first] if first else []) + [SHIM, program("test/libifunc_write.so")]
    script = "import os\nfor word in (b'one\\n', b'two\\n'): os.write(1, word)\n"
    result = run([PYTHON, "-S", "-c", script], env={"LD_PRELOAD": ":".join(preload)}, shim=False)
    assert (result.stdout, result.returncode) == (b"one\ntwo\n", 0)
    assert result.stderr.count(b"ifunc write\n") == 2, result.stderr


def syscalls(tmp_path, preload, label):
    """The system calls of one /bin/true started with PRELOAD, by name (strace)."""
    log = tmp_path / ("%s.strace" % label)
    subprocess.run(["strace", "-qq", "-o", str(log), "-E", "LD_PRELOAD=" + preload, "/bin/true"],
                   env=clean_env(), check=True)
    return collections.Counter(line.split("(")[0] for line in log.read_text().splitlines()
                               if "(" in line and not line.startswith("execve("))


def test_start_up_makes_the_system_calls_of_an_empty_preload_library(tmp_path):
    # A process that uses none of the hooked libraries starts as with an empty preload
    # library: no file-system probing, nothing but libc mapped.
    empty_source = tmp_path / "empty.c"
    empty_source.write_text("void nvs_empty_preload(void) {}\n")
    empty = tmp_path / "libempty.so"
    subprocess.run(["cc", "-shared", "-fPIC", str(empty_source), "-o", str(empty)], env=clean_env(),
                   check=True)
    floor, shim = syscalls(tmp_path, str(empty), "empty"), syscalls(tmp_path, SHIM, "shim")
    # Each call more than the floor, explained:
    explained = collections.Counter({
        "mmap": 1,    # the library's zero-initialised data is larger than its file's last page
        "getpid": 1,  # the constructor notes its process (a vfork child must leave it alone)
    })
    assert shim - floor <= explained, (shim - floor, shim, floor)
    assert not floor - shim, floor - shim
