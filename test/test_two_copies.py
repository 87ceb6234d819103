"""Two copies of the library in one process (an installed one already in LD_PRELOAD, and the
build's appended by nvtxshim run): the first acts, the second stays inert and says so in one
line; every call is traced once."""
import collections
import shutil

from conftest import SHIM, load_trace, program, ranges, run


def usb_calls(trace):
    return collections.Counter(e["name"].split(" ")[0] for e in ranges(load_trace(trace), "usb"))


def test_a_second_copy_stays_inert_and_each_call_is_traced_once(make_device, tmp_path):
    copy = tmp_path / "installed" / "libnvtxshim.so"
    copy.parent.mkdir()
    shutil.copy(SHIM, copy)
    argv = [program("test/frame_loop"), "6"]
    once, twice = tmp_path / "once.json", tmp_path / "twice.json"
    single = run(argv, env={"NVTXSHIM_TRACE": str(once)}, device=make_device(frames=6))
    # conftest.run appends the build's copy after what LD_PRELOAD holds: the installed
    # copy comes first.
    double = run(argv, env={"NVTXSHIM_TRACE": str(twice), "LD_PRELOAD": str(copy)},
                 device=make_device(frames=6))
    assert (double.stdout, double.returncode) == (single.stdout, single.returncode)
    assert single.stderr == b""
    lines = double.stderr.decode().splitlines()
    assert lines == ["nvtxshim: another copy of the library is loaded first (%s): this one (%s) "
                     "stays inert and passes every call through" % (copy, SHIM)], lines
    assert usb_calls(twice) == usb_calls(once) and sum(usb_calls(once).values()) >= 18
