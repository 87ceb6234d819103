"""Bad input: every NVTXSHIM_* variable with garbage, huge, empty and non-UTF-8
values, and the configuration parser's fuzz corpus (test/fuzz) replayed.

What docs/user-guide.md promises: a bad value gets one `nvtxshim:` line naming the
variable, that feature stays off and the program runs on unchanged; an empty
value counts as unset (no line)."""
import os

import pytest

from conftest import ROOT, SHIM, program, run

VARIABLES = ["NVTXSHIM_HOOKS", "NVTXSHIM_FRAME", "NVTXSHIM_FRAME_BUDGET", "NVTXSHIM_CAPTURE",
             "NVTXSHIM_CAPTURE_VIA", "NVTXSHIM_CAPTURE_NAME", "NVTXSHIM_TRACE", "NVTXSHIM_KERNEL",
             "NVTXSHIM_LOG", "NVTXSHIM_HELP"]
# An environment string may be at most 128 KiB long (the kernel's MAX_ARG_STRLEN):
# a 1 MiB value cannot reach a program at all, so "huge" is the largest that can.
HUGE = 128 * 1024 - 64


def value(kind):
    """A bad value of KIND for every variable: no variable accepts it. A str with
    surrogate escapes where the bytes are not UTF-8 (subprocess passes them on)."""
    if kind == "garbage":
        # Control bytes, an escape sequence, a newline, printf directives, shell
        # syntax; '%n' is no trace-path escape and the trailing '@' leaves
        # MESSAGE@DOMAIN without a domain.
        return "\x01\x1b[31m;$(id)`x`\n\t%n%s%p\x7f @"
    if kind == "huge":
        return "x" * HUGE
    if kind == "non-utf8":
        return os.fsdecode(b"\xff\xfe\xc3(\xe2\x82 %n@")
    return ""


def capture(device, env=None, shim=True):
    return run([program("usb_capture"), "--frames", "3"], env=env, shim=shim, device=device)


@pytest.fixture
def plain(make_device):
    device = make_device(frames=3)
    result = capture(device, shim=False)
    assert result.returncode == 0 and result.stderr == b""
    return device, result


def lines_of(result):
    return result.stderr.decode(errors="replace").split("\n")[:-1] if result.stderr else []


@pytest.mark.parametrize("kind", ["garbage", "huge", "non-utf8", "empty"])
@pytest.mark.parametrize("variable", VARIABLES)
def test_a_bad_value_gets_one_line_and_the_program_runs_on(plain, variable, kind):
    device, before = plain
    result = capture(device, {variable: value(kind)})
    assert (result.stdout, result.returncode) == (before.stdout, before.returncode)
    lines = lines_of(result)
    if kind == "empty":
        assert lines == []  # the same as unset
        return
    assert result.stderr.endswith(b"\n"), result.stderr[-300:]
    assert len(lines) == 1, lines
    assert lines[0].startswith("nvtxshim: %s=" % variable), lines[0][:300]
    assert len(lines[0]) < 1024


def test_a_non_utf8_trace_path_is_a_path(plain, tmp_path):
    # Any bytes but a NUL make a file name: such a NVTXSHIM_TRACE is valid.
    device, before = plain
    path = os.path.join(os.fsencode(tmp_path), b"\xff\xfe\xc3(-%p.json")
    result = capture(device, {"NVTXSHIM_TRACE": os.fsdecode(path)})
    assert (result.stdout, result.stderr, result.returncode) == (
        before.stdout, before.stderr, before.returncode)
    written = [name for name in os.listdir(os.fsencode(tmp_path)) if name.startswith(b"\xff\xfe")]
    assert len(written) == 1 and written[0].endswith(b".json")


@pytest.mark.parametrize("kind", ["garbage", "huge", "non-utf8"])
def test_every_variable_bad_at_once_one_line_each(plain, kind):
    device, before = plain
    # Huge values all at once would pass the kernel's 2 MiB limit for the whole
    # environment: a quarter of the largest each.
    bad = value(kind)[:HUGE // 4]
    result = capture(device, {variable: bad for variable in VARIABLES})
    assert (result.stdout, result.returncode) == (before.stdout, before.returncode)
    lines = lines_of(result)
    assert result.stderr.endswith(b"\n"), result.stderr[-300:]
    assert len(lines) == len(VARIABLES), lines
    for variable in VARIABLES:
        assert sum(line.startswith("nvtxshim: %s=" % variable) for line in lines) == 1, lines


@pytest.mark.parametrize("name", ["NVTXSHIM_\n", "NVTXSHIM_\x1b[2J", "NVTXSHIM_" + "Y" * 4096,
                                  os.fsdecode(b"NVTXSHIM_\xff\xfe")],
                         ids=["newline", "escape", "long", "non-utf8"])
def test_an_unknown_variable_with_a_garbage_name_gets_one_line(name):
    # sh drops variables whose names are no identifiers, so the shim is preloaded
    # here without conftest's sh wrapper; no device: usb_capture loads libusb,
    # which is enough for the messages, and says it found no device.
    argv = [program("usb_capture"), "--frames", "1"]
    before = run(argv, shim=False)
    preload = ":".join(filter(None, [os.environ.get("NVS_TEST_PRELOAD_FIRST"), SHIM]))
    result = run(argv, env={"LD_PRELOAD": preload, name: "1"}, shim=False)
    assert (result.stdout, result.returncode) == (before.stdout, before.returncode)
    lines = [line for line in lines_of(result) if line.startswith("nvtxshim: ")]
    # The line comes at load, before anything the program says.
    assert lines_of(result) == lines + before.stderr.decode().split("\n")[:-1]
    assert len(lines) == 1 and "is not a known variable" in lines[0], lines


def test_the_fuzz_corpus_replays_clean():
    # Each input of the parser's libFuzzer corpus, fed to the same target built
    # with gcc and ASan+UBSan (no libFuzzer needed): no report, no broken promise.
    corpus = os.path.join(ROOT, "test", "fuzz", "corpus")
    result = run([program("test/fuzz_replay"), corpus], shim=False)
    output = (result.stdout + result.stderr).decode(errors="replace")
    assert result.returncode == 0, output[-4000:]
    count = len([f for f in os.listdir(corpus) if not f.startswith(".")])
    assert "replayed %d inputs, 0 unreadable" % count in output
