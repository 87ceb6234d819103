"""The library's files depend on each other one way (docs/ARCHITECTURE.md, "Direction"):
scripts/direction.py draws the calls between them from the built objects' symbols and the
includes from the sources, and finds no cycle in either, no header of hooks/ included outside
it (but by init.c), no call from the descriptor table into a protocol file, no cycle of
includes in cli/ and no private header of the library included there. Each rule is also seen
to catch a back edge put in on purpose."""
import os
import re
import shutil
import subprocess

from conftest import BUILD, ROOT

SCRIPT = os.path.join(ROOT, "scripts", "direction.py")
OBJECTS = os.path.join(BUILD, "obj")


def direction(objects=OBJECTS, root=ROOT):
    return subprocess.run([SCRIPT, objects, root], capture_output=True, text=True, timeout=120)


def test_the_library_and_the_command_run_one_way():
    done = direction()
    assert done.returncode == 0 and done.stderr == "", done.stderr


def objects_with(tmp_path, module, source):
    """The build's objects, MODULE's replaced by SOURCE compiled."""
    copy = tmp_path / "obj"
    shutil.copytree(OBJECTS, copy, ignore=shutil.ignore_patterns("*.d"))
    path = tmp_path / "back.c"
    path.write_text(source)
    subprocess.run(["cc", "-c", str(path), "-o", str(copy / (module + ".o"))], check=True,
                   timeout=120)
    return str(copy)


def test_a_call_back_up_is_a_cycle(tmp_path):
    # The clock (which emit.c calls) calling the call path (which calls emit.c).
    objects = objects_with(tmp_path, "clock", "void nvs_call_dispatch(int, int, int, int);\n"
                           "void nvs_clock_anchor(void) { nvs_call_dispatch(0, 0, 0, 0); }\n")
    done = direction(objects)
    assert done.returncode == 1
    assert "a cycle of calls among" in done.stderr and "clock -> hook (nvs_call_dispatch)" in \
        done.stderr, done.stderr


def test_the_table_calling_a_protocol_is_caught(tmp_path):
    objects = objects_with(tmp_path, "devices", "void nvs_usbfs_closed(unsigned);\n"
                           "void nvs_devices_report(void) { nvs_usbfs_closed(1); }\n")
    done = direction(objects)
    assert done.returncode == 1
    assert "the descriptor table calls hooks/usbfs (nvs_usbfs_closed)" in done.stderr, done.stderr


def sources_with(tmp_path, path, line):
    root = tmp_path / "root"
    for folder in ("libnvtxshim", "cli"):
        shutil.copytree(os.path.join(ROOT, folder), root / folder)
    target = root / path
    target.write_text(line + "\n" + target.read_text())
    return str(root)


def test_an_include_back_up_is_a_cycle(tmp_path):
    done = direction(root=sources_with(tmp_path, "libnvtxshim/clock.c", '#include "hook.h"'))
    assert done.returncode == 1
    assert "a cycle of includes among" in done.stderr and "clock -> hook" in done.stderr, \
        done.stderr


def test_a_hooks_header_outside_hooks_is_caught(tmp_path):
    done = direction(root=sources_with(tmp_path, "libnvtxshim/frames.c",
                                       '#include "hooks/device_calls.h"'))
    assert done.returncode == 1
    assert "libnvtxshim/frames.c includes hooks/device_calls" in done.stderr, done.stderr


def test_cli_including_a_private_header_of_the_library_is_caught(tmp_path):
    done = direction(root=sources_with(tmp_path, "cli/report.c", '#include "frames.h"'))
    assert done.returncode == 1
    assert "cli/report.c includes libnvtxshim/frames.h" in done.stderr, done.stderr


def test_a_cycle_in_cli_is_caught(tmp_path):
    done = direction(root=sources_with(tmp_path, "cli/events.h", '#include "load.h"'))
    assert done.returncode == 1
    assert "a cycle of includes in cli/ among events, load" in done.stderr, done.stderr


# ---- the wrappers' macros ------------------------------------------------------------------

HOOK_MACROS = ("NVS_WRAPPER_BODY", "NVS_SPLIT_WRAPPER")
# The call path's tests, which only hook.h's two macros and hand-written wrappers make.
CALL_TESTS = ("nvs_call_begins(", "nvs_call_passes(", "nvs_call_enter(", "&nvs_real_functions[")
# Written out by hand, and why (docs/ARCHITECTURE.md): the synchronous transfers give libusb a
# transferred count of their own, so their real call is not the program's.
BESPOKE = {"DATA_TRANSFER"}


def macros(paths):
    """{name: body} of every #define in PATHS, continuation lines joined."""
    found = {}
    for path in paths:
        with open(path) as f:
            text = f.read().replace("\\\n", " ")
        for line in text.splitlines():
            words = line.split(None, 2)
            if len(words) >= 2 and words[0] == "#define":
                name = words[1].split("(")[0]
                found[name] = line
    return found


def wrapper_macro_problems(directory):
    """What breaks the rule: a macro outside hook.h that tests the call itself (a second
    wrapper body), or a chain of three macros from a wrapper's line to its body."""
    import glob
    family = macros(sorted(glob.glob(os.path.join(directory, "*.c")) +
                           glob.glob(os.path.join(directory, "*.h"))))
    problems = ["%s tests the call itself: a second wrapper body" % name
                for name, body in family.items()
                if name not in BESPOKE and any(test in body for test in CALL_TESTS)]
    makers = {name for name, body in family.items() if any(m in body for m in HOOK_MACROS)}
    for name, body in family.items():
        for maker in makers - {name}:
            if re.search(r"\b%s\s*\(" % maker, body):
                problems.append("%s expands to %s, which expands to hook.h's: three levels"
                                % (name, maker))
    return problems


def test_every_generated_wrapper_comes_from_hook_h_within_two_macro_levels():
    assert wrapper_macro_problems(os.path.join(ROOT, "libnvtxshim", "hooks")) == []


def test_a_third_macro_level_or_a_second_body_is_caught(tmp_path):
    hooks = tmp_path / "hooks"
    shutil.copytree(os.path.join(ROOT, "libnvtxshim", "hooks"), hooks)
    with open(hooks / "cuda.c", "a") as f:
        f.write("\n#define WAIT_TWICE(a, b, p, x) WAIT(a, p, x) WAIT(b, p, x)\n"
                "#define MY_BODY(name) if (!nvs_call_begins(1)) return 0;\n")
    problems = wrapper_macro_problems(str(hooks))
    assert any(p.startswith("WAIT_TWICE expands to WAIT") for p in problems), problems
    assert any(p.startswith("MY_BODY tests the call itself") for p in problems), problems
