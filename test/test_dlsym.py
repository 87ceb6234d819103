"""dlsym and dlvsym answer as without the library (test/programs/dlsym_truth.c): every global
form (RTLD_DEFAULT, RTLD_NEXT, dlopen(NULL)) gives NULL with dlerror set for a hooked name whose
library is not loaded, although the library exports that name; where the library is loaded, the
answer is the shim's wrapper (by dladdr), so that the calls are traced."""
import pytest

from conftest import program, run

FORMS = ("RTLD_DEFAULT", "RTLD_NEXT", "dlopen(NULL)")


def answers(result):
    assert result.returncode == 0 and result.stderr == b"", result.stderr
    return dict(line.split(": ", 1) for line in result.stdout.decode().splitlines())


def test_names_of_absent_libraries_are_not_found():
    plain = answers(run([program("test/dlsym_truth")], shim=False))
    shimmed = answers(run([program("test/dlsym_truth")]))
    assert shimmed == plain
    assert plain["libusb_bulk_transfer RTLD_DEFAULT"] == "NULL, dlerror set"
    assert all(value == "NULL, dlerror set" for value in shimmed.values()), shimmed


def test_names_of_loaded_libraries_are_the_wrappers():
    argv = [program("test/dlsym_truth"), "libusb-1.0.so.0", "libX11.so.6", "libxcb.so.1"]
    plain, shimmed = answers(run(argv, shim=False)), answers(run(argv))
    for name, library in (("libusb_bulk_transfer", "libusb-1.0.so.0"), ("XFlush", "libX11.so.6"),
                          ("xcb_flush", "libxcb.so.1")):
        for form in FORMS:
            assert plain["%s %s" % (name, form)] == "found in " + library
            assert shimmed["%s %s" % (name, form)] == "found in libnvtxshim.so"
    # The rest stay absent, with or without the shim.
    for name in ("eglSwapBuffers", "cuMemcpyHtoD_v2", "cudaMemcpy", "cuGetProcAddress"):
        for form in FORMS:
            assert shimmed["%s %s" % (name, form)] == plain["%s %s" % (name, form)] == \
                "NULL, dlerror set"


def test_a_switched_off_hook_gives_the_real_function():
    argv = [program("test/dlsym_truth"), "libusb-1.0.so.0"]
    shimmed = answers(run(argv, env={"NVTXSHIM_HOOKS": "x11"}))
    for form in FORMS:
        assert shimmed["libusb_bulk_transfer %s" % form] == "found in libusb-1.0.so.0"


def test_a_versioned_lookup_of_a_hooked_libc_function_is_the_wrapper(tmp_path):
    # execve is hooked while a trace is recorded (the file is finished before the image is
    # replaced): asked for by name or by name and libc's symbol version, a program gets the
    # wrapper, or its exec would leave the trace unfinished. Without a trace: libc's own.
    argv = [program("test/dlsym_truth"), "--libc"]
    plain = run(argv, shim=False)
    if plain.returncode == 3:
        pytest.skip(plain.stdout.decode().strip())
    plain = answers(plain)
    forms = FORMS + ("dlvsym", "dlvsym RTLD_NEXT")
    assert all(plain["execve %s" % form] == "found in libc.so.6" for form in forms), plain
    assert answers(run(argv)) == plain
    trace = tmp_path / "t.json"
    traced = answers(run(argv, env={"NVTXSHIM_TRACE": str(trace)}))
    assert {form: traced["execve %s" % form] for form in forms} == dict.fromkeys(
        forms, "found in libnvtxshim.so")
