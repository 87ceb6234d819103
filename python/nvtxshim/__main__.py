"""``nvtxshim`` and ``python -m nvtxshim``: the bundled command, in this process's place."""
import os
import sys

from . import command


def main():
    path = command()
    if not os.access(path, os.X_OK):
        sys.stderr.write("nvtxshim: the bundled command is missing (%s): reinstall the wheel\n" % path)
        return 127
    # exec, so that the command's exit status, signals and terminal are the caller's
    os.execv(path, [path] + sys.argv[1:])
    return 127


if __name__ == "__main__":
    sys.exit(main())
