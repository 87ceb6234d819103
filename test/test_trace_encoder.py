"""The JSON trace encoder on its own (test/unit/test_trace_json.c): each kind of event
encoded into a buffer and compared with the exact text a reader must see."""
import subprocess

from conftest import clean_env, program


def test_trace_encoder_unit_tests():
    result = subprocess.run([program("test/test_trace_json")], env=clean_env(), capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 failed" in result.stdout
