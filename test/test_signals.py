"""The signal trigger (NVTXSHIM_CAPTURE=signal) keeps an ignored signal ignored, in the kernel:
a system call is not cut short when the signal arrives, a program the process execs inherits
the ignore (and survives the signal), nohup works; one line says the trigger cannot fire."""
import signal

import pytest

from conftest import program, run

CHILD = ["sh", "-c", 'kill -%s $$; echo "child survived"']


def both(argv, env):
    return run(argv, shim=False), run(argv, env=env)


@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize("name", ["USR1", "HUP"])
def test_an_ignored_signal_stays_ignored(when, name):
    number = getattr(signal, "SIG" + name)
    argv = [program("test/signal_ignore"), str(int(number)), when] + \
        [CHILD[0], CHILD[1], CHILD[2] % name]
    plain, shimmed = both(argv, {"NVTXSHIM_CAPTURE": "signal:" + name})
    assert plain.stdout == b"nanosleep: whole\ndisposition: ignored\nchild survived\n"
    assert (shimmed.stdout, shimmed.returncode) == (plain.stdout, plain.returncode)
    lines = shimmed.stderr.decode().splitlines()
    assert [line for line in lines if "ignores SIG" + name in line] == [
        "nvtxshim: NVTXSHIM_CAPTURE=signal: the program ignores SIG%s, so the capture cannot be "
        "toggled while it does (it stays ignored)" % name], lines


def test_nohup_keeps_hangups_ignored_for_the_program_and_its_children(tmp_path):
    argv = ["nohup", program("test/signal_ignore"), str(int(signal.SIGHUP)), "inherited",
            CHILD[0], CHILD[1], CHILD[2] % "HUP"]
    plain, shimmed = both(argv, {"NVTXSHIM_CAPTURE": "signal:HUP"})
    assert plain.stdout == b"nanosleep: whole\ndisposition: ignored\nchild survived\n"
    assert (shimmed.stdout, shimmed.returncode) == (plain.stdout, plain.returncode)


def test_the_trigger_is_in_place_where_the_signal_is_not_ignored():
    # Default disposition: the trigger takes the signal (which would otherwise end the
    # program), and the program is still told its disposition is the default.
    argv = [program("test/signal_ignore"), str(int(signal.SIGUSR1)), "none"]
    shimmed = run(argv, env={"NVTXSHIM_CAPTURE": "signal:USR1"})
    assert shimmed.returncode == 0, shimmed.stderr
    assert shimmed.stdout.endswith(b"disposition: default\n")
    assert b"ignores" not in shimmed.stderr
