"""The library's files depend on each other one way (docs/ARCHITECTURE.md, "Direction"):
scripts/direction.py draws the calls between them from the built objects' symbols and the
includes from the sources, and finds no cycle in either, no call or include from a floor to
one above it (the registry at the bottom, the composition on top), no header of hooks/
included outside it (but by init.c), no call from the descriptor table into a kind's file,
no cycle of includes in cli/ and no private header of the library included there. Each rule
is also seen to catch a back edge put in on purpose. And no two source files share a name."""
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


def test_the_table_calling_a_kind_is_caught(tmp_path):
    # The table naming a kind's const (its last close) instead of reaching it through the list
    # init.c gives it: on one floor, no arrow up, but rule 4.
    objects = objects_with(tmp_path, "devices/table",
                           "extern const char nvs_device_usbfs[];\n"
                           "const char *nvs_devices_report(void) { return nvs_device_usbfs; }\n")
    done = direction(objects)
    assert done.returncode == 1
    assert "the descriptor table calls devices/usbfs (nvs_device_usbfs)" in done.stderr, \
        done.stderr


def test_a_call_to_a_floor_above_is_caught(tmp_path):
    # The schema (the base) calling NVTX's door (emit.c), which never calls it back: no
    # cycle, an arrow up.
    objects = objects_with(tmp_path, "schema", "void nvs_emit_set_direct(void *);\n"
                           "void nvs_schema_hook(void) { nvs_emit_set_direct(0); }\n")
    done = direction(objects)
    assert done.returncode == 1
    assert "schema (the base) calls emit (NVTX), a floor above it: nvs_emit_set_direct" in \
        done.stderr and "a cycle" not in done.stderr, done.stderr


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


def test_the_registry_including_a_floor_above_is_caught(tmp_path):
    done = direction(root=sources_with(tmp_path, "libnvtxshim/registry/names.c",
                                       '#include "../config.h"'))
    assert done.returncode == 1
    assert "registry/names (the registry) includes config (the base), a floor above it" in \
        done.stderr and "a cycle" not in done.stderr, done.stderr


def test_a_file_on_no_floor_is_caught(tmp_path):
    root = sources_with(tmp_path, "libnvtxshim/log.c", "")
    with open(os.path.join(root, "libnvtxshim", "stray.c"), "w") as f:
        f.write('#include "log.h"\n')
    done = direction(root=root)
    assert done.returncode == 1
    assert "stray stands on no floor" in done.stderr, done.stderr


def test_a_hooks_header_outside_hooks_is_caught(tmp_path):
    done = direction(root=sources_with(tmp_path, "libnvtxshim/frames.c",
                                       '#include "hooks/display.h"'))
    assert done.returncode == 1
    assert "libnvtxshim/frames.c includes hooks/display" in done.stderr, done.stderr


def test_cli_including_a_private_header_of_the_library_is_caught(tmp_path):
    done = direction(root=sources_with(tmp_path, "cli/commands/report.c", '#include "frames.h"'))
    assert done.returncode == 1
    assert "cli/commands/report.c includes libnvtxshim/frames.h" in done.stderr, done.stderr


def test_a_cycle_in_cli_is_caught(tmp_path):
    # by room, as the compiler finds it from -Icli
    done = direction(root=sources_with(tmp_path, "cli/model/events.h", '#include "readers/load.h"'))
    assert done.returncode == 1
    assert "a cycle of includes in cli/ among model/events, readers/load" in done.stderr, done.stderr


def test_a_room_of_cli_including_one_not_below_it_is_caught(tmp_path):
    # writers/ and readers/ stand side by side: neither includes the other (no cycle here)
    done = direction(root=sources_with(tmp_path, "cli/writers/output.c", '#include "readers/input.h"'))
    assert done.returncode == 1
    assert ("cli/writers/output.c includes cli/readers/input: a room of cli/ includes only the rooms "
            "below it") in done.stderr, done.stderr
    assert "cycle" not in done.stderr, done.stderr


# ---- the wrappers' macros ------------------------------------------------------------------

HOOK_MACROS = ("NVS_SPLIT_WRAPPER", "NVS_SPLIT_WRAPPER_TRACED")
# The call path's tests, which only hook.h's two macros and hand-written wrappers make.
CALL_TESTS = ("nvs_call_begins(", "nvs_call_passes(", "nvs_call_enter(", "&nvs_real_functions[")


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
                if any(test in body for test in CALL_TESTS)]
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


# ---- names -------------------------------------------------------------------------------

# Each program's entry point is main.c in its own folder: one job, the same name.
SAME_JOB = {"main.c"}


def shared_names(root):
    """{base name: [paths]} of the C sources, headers and tables under libnvtxshim/ and cli/
    (and the examples) that share a base name with another in a different folder."""
    seen = {}
    for folder in ("libnvtxshim", "cli", "examples"):
        for where, _, files in os.walk(os.path.join(root, folder)):
            for name in files:
                if name.endswith((".c", ".h", ".def")) and name not in SAME_JOB:
                    seen.setdefault(name, []).append(
                        os.path.relpath(os.path.join(where, name), root))
    return {name: sorted(paths) for name, paths in seen.items() if len(paths) > 1}


def test_no_two_source_files_share_a_name():
    assert shared_names(ROOT) == {}


def test_two_files_of_one_name_are_caught(tmp_path):
    root = tmp_path / "root"
    shutil.copytree(os.path.join(ROOT, "cli"), root / "cli")
    shutil.copytree(os.path.join(ROOT, "libnvtxshim"), root / "libnvtxshim")
    (root / "cli" / "clock.c").write_text("/* a second clock */\n")
    assert shared_names(str(root)).get("clock.c") == ["cli/clock.c", "libnvtxshim/clock.c"]
