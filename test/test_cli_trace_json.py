"""The command's JSON reader for trace files on its own (test/unit/test_cli_trace_json.c):
well-formed traces in both forms, numbers, strings and their escapes, nested args, traces
cut short anywhere, and garbage and deep nesting refused without a crash."""
import subprocess

from conftest import program


def test_cli_trace_json_unit_tests():
    result = subprocess.run([program("test/test_cli_trace_json")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 failed" in result.stdout
