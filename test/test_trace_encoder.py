"""The JSON trace encoder on its own (test/unit/test_trace_json.c): each kind of event
encoded into a buffer and compared with the exact text a reader must see - names and their
escapes, categories, every payload type, times of every width, async begin/end pairs, and a
whole file with its tail."""
import subprocess

from conftest import clean_env, program


def unit_tests(*args):
    return subprocess.run([program("test/test_trace_json")] + list(args), env=clean_env(),
                          capture_output=True, text=True, errors="replace")


def test_trace_encoder_unit_tests():
    result = unit_tests()
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 failed" in result.stdout


def test_names_that_are_not_utf8_still_give_utf8():
    result = unit_tests("utf8")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    assert " 0 failed" in result.stdout
