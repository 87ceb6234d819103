"""dlsym and dlvsym answer as without the library (test/programs/dlsym_truth.c): every global
form (RTLD_DEFAULT, RTLD_NEXT, dlopen(NULL)) gives NULL with dlerror set for a hooked name whose
library is not loaded, although the library exports that name; where the library is loaded, the
answer is the shim's wrapper (by dladdr), so that the calls are traced."""
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
