"""The environment a test gives a child process. Kept apart from conftest.py so that the
helpers conftest itself imports (xserver.py) can use it too; the tests import it from
conftest."""
import os


def is_shim_setting(name):
    """Whether the variable NAME would change what the shim, or an NVTX tool, does in a
    child: LD_PRELOAD, every NVTXSHIM_* variable, NVTX_INJECTION64_PATH (and its 32-bit
    twin)."""
    return name == "LD_PRELOAD" or name.startswith(("NVTXSHIM_", "NVTX_INJECTION"))


def clean_env(extra=None, inherit=True, drop=()):
    """The environment every test gives a child process: the test's own environment (with
    INHERIT false, its PATH alone) without the shim's settings (is_shim_setting) and without
    the names in DROP, then EXTRA added. A variable set around the test run (the user's
    LD_PRELOAD, an NVTXSHIM_TRACE left exported) thus never reaches a program unless the test
    sets it itself; the test run's own variables (NVS_TEST_*, ASAN_OPTIONS) stay."""
    base = os.environ if inherit else {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    env = {k: v for k, v in base.items() if not is_shim_setting(k) and k not in drop}
    env.update(extra or {})
    return env
