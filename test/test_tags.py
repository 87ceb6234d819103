"""make tags finds every wrapper: ctags reads C as written, so a wrapper a macro writes
(DATA_TRANSFER(libusb_bulk_transfer), COPY_PAIR(..., cuMemcpyHtoDAsync_v2, ...)) or one
defined under its assembler name (nvs_open(...) __asm__("open")) is no function to it;
scripts/tags.py adds a tag at the line that makes each symbol the registry lists."""
import os
import re
import shutil
import subprocess

from conftest import ROOT

SCRIPT = os.path.join(ROOT, "scripts", "tags.py")


def registry_symbols(root=ROOT):
    found = []
    folder = os.path.join(root, "libnvtxshim", "registry")
    for name in sorted(os.listdir(folder)):
        if name.endswith(".def"):
            with open(os.path.join(folder, name)) as f:
                found += re.findall(r"^NVS_HOOK\((\w+),", f.read(), re.M)
    return found


def tags_of(path):
    """{name: [(file, pattern)]} of a tags file's function tags in the library."""
    found = {}
    with open(path) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if line.startswith("!_TAG_") or len(fields) < 4 or fields[3] != "f":
                continue
            found.setdefault(fields[0], []).append((fields[1], fields[2]))
    return found


def test_every_hooked_symbol_has_a_tag_at_its_wrapper(tmp_path):
    out = tmp_path / "tags"
    done = subprocess.run([SCRIPT, str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    tags = tags_of(out)
    symbols = registry_symbols()
    assert len(symbols) > 150
    lost = [s for s in symbols
            if not any(path.startswith("libnvtxshim/") and not path.startswith(
                "libnvtxshim/registry/") for path, _ in tags.get(s, []))]
    assert lost == []
    usb = [(p, q) for p, q in tags["libusb_bulk_transfer"] if p.startswith("libnvtxshim/")]
    assert usb == [("libnvtxshim/hooks/usb.c", "/^DATA_TRANSFER(libusb_bulk_transfer)$/;\"")]
    copy = [p for p, q in tags["cuMemcpyHtoDAsync_v2_ptsz"] if "COPY_PAIR(" in q]
    assert copy == ["libnvtxshim/hooks/cuda.c"]
    assert any('__asm__("open")' in q for _, q in tags["open"])
    # The rest of the index is ctags' own: the call path's functions, the command's.
    assert any(p == "libnvtxshim/hook.c" for p, _ in tags["nvs_call_dispatch"])


def test_ctags_alone_misses_the_generated_wrappers(tmp_path):
    # What make tags adds: without it, no tag leads to the macro-made wrappers.
    out = subprocess.run(["ctags", "-R", "-f", "-", "--languages=C", "libnvtxshim"], cwd=ROOT,
                         capture_output=True, text=True, check=True, timeout=120).stdout
    names = {line.split("\t", 1)[0] for line in out.splitlines()}
    assert "libusb_bulk_transfer" not in names and "cuMemcpyHtoDAsync_v2_ptsz" not in names


def test_a_hooked_symbol_without_a_wrapper_is_said(tmp_path):
    root = tmp_path / "root"
    for folder in ("scripts", "libnvtxshim", "cli", "examples"):
        shutil.copytree(os.path.join(ROOT, folder), root / folder)
    with open(root / "libnvtxshim" / "registry" / "usb.def", "a") as f:
        f.write('NVS_HOOK(libusb_nowhere, "libusb-1.0.so.0")\n')
    done = subprocess.run([str(root / "scripts" / "tags.py"), str(tmp_path / "tags")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr == "tags: no wrapper found for libusb_nowhere (registry/*.def lists it)\n"
