"""libnvtxshim and the nvtxshim command, as a Python package.

The wheel holds the library (``libnvtxshim.so``) and the command (``nvtxshim``)
side by side in ``_native/``; the command finds the library beside itself.
From Python::

    import nvtxshim
    nvtxshim.library()      # the path for LD_PRELOAD
    nvtxshim.command()      # the command's path

From a shell, the ``nvtxshim`` on PATH (or ``python -m nvtxshim``) is the
command itself: ``nvtxshim run --trace rig.json -- python rig.py``,
``LD_PRELOAD=$(nvtxshim --library) nsys profile ...``.
"""
import os

__all__ = ["library", "command", "__version__"]

_NATIVE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_native")


def library():
    """The path of the bundled libnvtxshim.so."""
    return os.path.join(_NATIVE, "libnvtxshim.so")


def command():
    """The path of the bundled nvtxshim command."""
    return os.path.join(_NATIVE, "nvtxshim")


def _version():
    try:
        from importlib.metadata import version
        return version("nvtxshim")
    except Exception:  # not installed (a source tree): no version to give
        return "unknown"


__version__ = _version()
