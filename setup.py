"""The wheel's build: pyproject.toml has the metadata; this runs the Makefile for the
library and the command (into build/wheel, apart from the development build) and puts both
in the package's _native/ directory. The wheel is platform-specific (a Linux x86-64 library
and program) and Python-independent (no extension module): py3-none-linux_x86_64, which
auditwheel repair makes a manylinux wheel (make wheel)."""
import os
import shutil
import subprocess
import sysconfig

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

try:
    from wheel.bdist_wheel import bdist_wheel
except ImportError:  # setuptools that carries its own
    from setuptools.command.bdist_wheel import bdist_wheel

ROOT = os.path.dirname(os.path.abspath(__file__))
NATIVE = ("libnvtxshim.so", "nvtxshim")


class build_native(build_py):
    def run(self):
        super().run()
        build = os.environ.get("NVS_WHEEL_BUILD", "build/wheel")
        # make wheel (scripts/wheel.sh) names the compiler for glibc 2.28 and the static
        # libraries the command links; a plain pip wheel . builds with the system's
        settings = ["%s=%s" % (variable, os.environ[name])
                    for variable, name in (("CC", "NVS_WHEEL_CC"), ("CLI_LIBS", "NVS_WHEEL_CLI_LIBS"),
                                           ("ARCH", "NVS_WHEEL_ARCH"))
                    if os.environ.get(name)]
        # every core, unless a make above shares its jobs (MAKEFLAGS names its jobserver)
        jobs = [] if "jobserver" in os.environ.get("MAKEFLAGS", "") else ["-j%d" % (os.cpu_count() or 1)]
        subprocess.run(["make", "--no-print-directory", *jobs, "BUILD=" + build, *settings,
                        *("%s/%s" % (build, name) for name in NATIVE)], cwd=ROOT, check=True)
        target = os.path.join(self.build_lib, "nvtxshim", "_native")
        os.makedirs(target, exist_ok=True)
        for name in NATIVE:
            copy = os.path.join(target, name)
            shutil.copy2(os.path.join(ROOT, build, name), copy)
            # the development build keeps its debug information; the wheel need not carry it
            strip = os.environ.get("NVS_WHEEL_STRIP", "strip")
            if shutil.which(strip):
                subprocess.run([strip, "--strip-debug", copy], check=True)


class native_distribution(Distribution):
    def has_ext_modules(self):
        return True


class native_wheel(bdist_wheel):
    def get_tag(self):
        # make wheel ARCH=aarch64 (scripts/wheel.sh) names the platform it builds for
        platform = os.environ.get("NVS_WHEEL_PLATFORM") or sysconfig.get_platform()
        return "py3", "none", platform.replace("-", "_").replace(".", "_")


# setuptools' own scratch under build/wheel (or the aarch64 wheel's tree), beside the Makefile's
# objects there
WHEEL_TREE = os.environ.get("NVS_WHEEL_BUILD", "build/wheel")
os.makedirs(os.path.join(ROOT, WHEEL_TREE), exist_ok=True)
setup(cmdclass={"build_py": build_native, "bdist_wheel": native_wheel}, distclass=native_distribution,
      options={"build": {"build_base": WHEEL_TREE + "/setuptools"},
               "egg_info": {"egg_base": WHEEL_TREE}})
