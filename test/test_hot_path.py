"""After warm-up a hooked call allocates nothing: the only allocations that grow
with the run are registrations of names never seen before (here the control
request's value, which the loop changes every frame)."""
import pytest

from conftest import STUB, load_trace, names, program, run


def run_with_counter(make_device, tmp_path, frames):
    from conftest import SHIM
    device = make_device(frames=frames)
    counter = tmp_path / ("count-%d" % frames)
    trace = tmp_path / ("trace-%d.json" % frames)
    preload = 'LD_PRELOAD="$LD_PRELOAD:%s:%s" exec "$@"' % (program("test/libmalloc_count.so"), SHIM)
    result = run(["sh", "-c", preload, "sh", program("usb_capture"), "--async", "--frames", str(frames)],
                 env={"NVS_MALLOC_COUNT": str(counter), "NVTXSHIM_TRACE": str(trace),
                      "NVTXSHIM_FRAME": "usb.in"}, device=device, shim=False)
    assert result.returncode == 0, result.stderr
    distinct = {n for n in names(load_trace(trace)) if not n.startswith("frame ")}
    return int(counter.read_text()), distinct


def test_allocations_grow_only_with_new_names(make_device, tmp_path):
    short_allocations, short_names = run_with_counter(make_device, tmp_path, 10)
    long_allocations, long_names = run_with_counter(make_device, tmp_path, 60)
    assert short_allocations > 0  # the counter does see the shim's warm-up
    assert long_allocations - short_allocations == len(long_names) - len(short_names) == 50


@pytest.mark.parametrize("mode", ["linked", "getproc-ptds"])
def test_waits_and_launches_allocate_nothing_after_warm_up(tmp_path, mode):
    """CUDA waits and launches (test/cuda/cuda_waits.c on the stand-in driver), 2 rounds of
    each form or 200: the shim allocates as much (the kernel names are cached)."""
    from conftest import SHIM

    def allocations(repeats):
        counter = tmp_path / ("count-%d" % repeats)
        preload = 'LD_PRELOAD="$LD_PRELOAD:%s:%s" exec "$@"' % (program("test/libmalloc_count.so"), SHIM)
        result = run(["sh", "-c", preload, "sh", program("test/cuda_waits"), mode, str(repeats)],
                     env={"NVS_MALLOC_COUNT": str(counter), "LD_LIBRARY_PATH": STUB,
                          "NVTXSHIM_TRACE": str(tmp_path / ("t-%d.json" % repeats))}, shim=False)
        assert result.returncode == 0, result.stderr
        return int(counter.read_text())

    few, many = allocations(2), allocations(200)
    assert few > 0 and many == few
