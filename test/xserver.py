"""A private Xvfb for the tests: a free display picked by Xvfb itself
(-displayfd), ready when it says so, stopped at the end."""
import os
import subprocess

from childenv import clean_env


class Xvfb:
    def __init__(self, *extra):
        read_end, write_end = os.pipe()
        self.process = subprocess.Popen(
            ["Xvfb", "-displayfd", str(write_end), "-screen", "0", "640x480x24", "-noreset"] +
            list(extra), pass_fds=(write_end,), env=clean_env(), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(write_end)
        with os.fdopen(read_end) as pipe:
            number = pipe.readline().strip()
        if not number:
            self.process.kill()
            raise RuntimeError("Xvfb did not start")
        self.number = int(number)
        self.display = ":%d" % self.number

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)
