"""The library's shape: what it exports and what it links."""
import os
import re
import subprocess

from conftest import ROOT, SHIM


def hook_table(name):
    with open(os.path.join(ROOT, "libnvtxshim", "hooks", name)) as f:
        return re.findall(r"^NVS_HOOK\((\w+),", f.read(), re.M)


def test_exports_are_exactly_the_hooks_dlsym_and_the_nvtx_entry_point():
    output = subprocess.run(["nm", "-D", "--defined-only", SHIM], capture_output=True,
                            text=True, check=True).stdout
    exported = {line.split()[-1] for line in output.splitlines() if line.strip()}
    # The version script is generated from the hook tables (cpp keeps the entry
    # points the installed cuda.h declares); it and the library must agree.
    with open(os.path.join(ROOT, "build", "exports.map")) as f:
        mapped = set(re.findall(r"^\s*(\w+);", f.read().split("local:")[0], re.M))
    assert exported == mapped
    tables = [f for f in os.listdir(os.path.join(ROOT, "libnvtxshim", "hooks")) if f.endswith(".def")]
    assert {"usb.def", "x11.def", "cuda.def", "cudart.def", "process.def"} <= set(tables)
    listed = set()
    for table in tables:
        listed |= set(hook_table(table))
    assert {"dlsym", "dlvsym", "InitializeInjectionNvtx2"} <= mapped
    assert mapped - {"dlsym", "dlvsym", "InitializeInjectionNvtx2"} <= listed
    assert {"libusb_bulk_transfer", "XPutImage", "cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2_ptds",
            "cuGetProcAddress", "cudaMemcpyAsync_ptsz", "execve"} <= mapped


def test_links_only_libc():
    # Every process that inherits LD_PRELOAD maps what the library needs: libc alone, also in
    # the build with the kernel probe (libbpf is opened with dlopen when NVTXSHIM_KERNEL asks).
    output = subprocess.run(["readelf", "-d", SHIM], capture_output=True, text=True,
                            check=True).stdout
    needed = set(re.findall(r"\(NEEDED\).*\[(.+)\]", output))
    assert needed == {"libc.so.6"}, needed
    assert not any("usb" in n or "X11" in n or "cuda" in n for n in needed)
