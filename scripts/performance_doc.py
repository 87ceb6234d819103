#!/usr/bin/env python3
"""docs/performance.md's figures, from one `make bench` run's results.json.

The doc is prose with generated blocks; each block sits between

    <!-- bench:NAME -->
    ...
    <!-- /bench:NAME -->

and holds exactly what this script makes of the results for NAME (the run, the per-call table,
the other tracers, the harness, start-up, memory, convert, the trace's size, the targets). The
prose around the blocks carries no figure of its own.

    scripts/performance_doc.py [--results FILE] [--doc FILE]           rewrite the blocks
    scripts/performance_doc.py --check [--results FILE] [--doc FILE]   exit 1 where a block differs
    scripts/performance_doc.py --take build/bench/results.json         copy a run in as the doc's, then rewrite

A run of some parts alone (`make bench-long`: BENCH_ONLY=long) is taken into the checked-in results
for those parts only; its block names its own run. The checked-in results are bench/results.json;
test/test_docs.py runs --check."""
import argparse
import json
import os
import re
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import bench  # noqa: E402  (the call kinds, the rows and the targets are bench.py's)

RESULTS = os.path.join(ROOT, "bench", "results.json")
DOC = os.path.join(ROOT, "docs", "performance.md")
BLOCK = re.compile(r"(<!-- bench:(\w+) -->\n)(.*?)(<!-- /bench:\2 -->)", re.S)


def ns(stat):
    return "–" if not stat else bench.fmt_ns(stat["median"])


def instructions(value):
    return "–" if value is None else "%.0f" % value


def spread(stat, scale=1, digits=1, unit=""):
    """STAT's "median [min–max]", each times SCALE, to DIGITS decimals, UNIT after the median;
    "–" where there is none."""
    if not stat:
        return "–"
    number = "%%.%df" % digits
    return (number + unit.replace("%", "%%") + " [" + number + "–" + number + "]") % (
        stat["median"] * scale, stat["min"] * scale, stat["max"] * scale)


def median(results, column, row, kind):
    stat = results["ns"].get(column, {}).get(row, {}).get(kind)
    return stat["median"] if stat else None


def table(head, rows):
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def block_run(results):
    meta, s = results["meta"], results["settings"]
    return (
        "Measured by one `make bench` on %s, on `%s` (%s), at commit `%s`; the run took %.0f s%s.\n"
        "ns per call: the median over %d processes × %d repeats × %s calls with no tool or the null "
        "tool, %d × %d × %s recording, %d × %d × %s under nsys. Instructions per call: callgrind, "
        "%s calls (%s recording) after 1,000 calls of warm-up.\n"
        % (meta["date"], meta["host"], meta["cpu"], meta.get("commit", "?"), meta["seconds"],
           " (a quick run: `BENCH_QUICK=1`)" if meta.get("quick") else "",
           s["rounds_none"], s["repeats_none"], "{:,}".format(s["n_none"]),
           s["rounds_trace"], s["repeats"], "{:,}".format(s["n_traced"]),
           s["rounds_nsys"], s["repeats_nsys"], "{:,}".format(s["n_nsys"]),
           "{:,}".format(s["n_callgrind"]), "{:,}".format(s["n_callgrind_traced"])))


def block_calls(results, device=True):
    rows = []
    labels = bench.ROWS + ([("baseline", "baseline build")]
                           if any("baseline" in results["ns"].get(c, {}) for c, _ in bench.RECORDINGS) else [])
    for kind, call, ranges in bench.KINDS:
        if (ranges > 0) != device:
            continue
        name = "`%s`" % call if ranges <= 1 else "`%s` + events + callback (%d ranges)" % (call, ranges)
        for index, (row, label) in enumerate(labels):
            if row == "hand" and not device:
                continue                       # nothing is traced on these: no pair to write
            cells = [ns(results["ns"].get(column, {}).get(row, {}).get(kind))
                     for column, _ in bench.COLUMNS]
            counts = " / ".join(instructions(results["instructions"].get(column, {}).get(row, {}).get(kind))
                                for column in bench.INSTRUCTION_COLUMNS)
            rows.append([name if index == 0 else "", label] + cells + [counts])
    head = ["call", "row", "no tool", "null tool", "`.json`", "`.pftrace`", "`nsys -t nvtx`",
            "instructions: no tool / null / `.json` / `.pftrace`"]
    return table(head, rows)


def block_added(results):
    rows = []
    for kind, call, ranges in bench.KINDS:
        if ranges == 0:
            continue
        cells = []
        for column, _ in bench.COLUMNS:
            shim, plain = median(results, column, "shim", kind), median(results, column, "plain", kind)
            hand = median(results, column, "hand", kind)
            cells.append("–" if shim is None or plain is None else "+%s%s" % (
                bench.fmt_ns(shim - plain), "" if hand is None else " (+%s)" % bench.fmt_ns(hand - plain)))
        rows.append(["`%s`" % call] + cells)
    return table(["call", "no tool", "null tool", "`.json`", "`.pftrace`", "`nsys -t nvtx`"], rows)


def block_floor(results):
    floor = results.get("floor", {})
    if not floor.get("ns"):
        return "No floor row in this run.\n"
    text = ("The floor: %s ns and %s instructions a range (median [min-max] of the recording rounds).\n\n"
            % (bench.spread_text(floor["ns"], 1, 1),
               "–" if floor.get("instructions") is None else instructions(floor["instructions"])))
    rows = []
    for kind, call, ranges in bench.KINDS:
        if ranges == 0:
            continue
        cells = []
        for column, _ in bench.RECORDINGS:
            per_range, ratio, ir = bench.floor_ratios(results, column, kind, ranges)
            kernel = bench.kernel_part(results, column, kind, ranges)
            cells += ["–" if per_range is None else "+%s" % bench.fmt_ns(per_range),
                      "–" if kernel is None else bench.fmt_ns(kernel),
                      "–" if ratio is None else "%.2f ×" % ratio,
                      "–" if ir is None else "%.0f" % ir]
        rows.append(["`%s`" % call + ("" if ranges == 1 else " (a range of %d)" % ranges)] + cells)
    return text + table(["call", "`.json` ns", "of it writing", "× floor", "instructions",
                         "`.pftrace` ns", "of it writing", "× floor", "instructions"], rows)


def block_tools(results):
    plain = results["ns"].get("none", {}).get("plain", {}).get("usb_sync")
    ioctl = results["tools"].get("ioctl(FIONREAD), no tool", {}).get("ns")
    shim = median(results, "trace", "shim", "usb_sync")
    pftrace = median(results, "pftrace", "shim", "usb_sync")
    rows = []
    if shim is not None and plain:
        rows.append(["the shim, recording `.json`", "libusb_bulk_transfer", "+" + bench.fmt_ns(shim - plain["median"]),
                     "every range in the trace file"])
    if pftrace is not None and plain:
        rows.append(["the shim, recording `.pftrace`", "libusb_bulk_transfer",
                     "+" + bench.fmt_ns(pftrace - plain["median"]), "every range in the trace file"])
    for name, tool in results["tools"].items():
        if "no tool" in name:
            continue
        if tool.get("missing") or tool.get("failed"):
            rows.append([name, "–", "not installed" if tool.get("missing") else "failed", tool.get("note", "")])
            continue
        base = ioctl if "ioctl" in name else plain
        call = "ioctl(FIONREAD)" if "ioctl" in name else "libusb_bulk_transfer"
        added = "–" if not base else "+" + bench.fmt_ns(tool["ns"]["median"] - base["median"])
        rows.append([name.replace(", ioctl", ""), call, added,
                     "; ".join(part for part in (tool.get("verified"), tool.get("note")) if part)])
    return table(["tracer", "call", "ns added a call", "checked"], rows)


def block_harness(results):
    s = results["settings"]
    rows = []
    for entry in results["harness"].values():
        rows.append([entry["label"], spread(entry["fps"]), spread(entry.get("ratio"), 100, unit="%")])
    return ("The example harness on the emulated camera, 320×240, `--async --fps 0 --inference=cpu`, no GUI "
            "(bench.py's measure_harness), %d frames, %d interleaved runs of each; the ratio pairs each run "
            "with the untraced run just before it.\n\n"
            % (s["harness_frames"], s["harness_runs"])
            + table(["run", "frames a second, median [min–max]", "of untraced, median [min–max]"], rows))


def block_starts(results):
    s = results["settings"]
    rows = []
    for entry in results["starts"].values():
        # the empty library's own ratio is 1 by construction: not shown
        ratio = None if entry["label"].startswith("empty") else entry.get("over_empty")
        rows.append([entry["label"], spread(entry["ns"], 1 / 1000, 0), spread(ratio, 100, unit="%")])
    return ("`/bin/true`, a process that uses no hooked library, started %d times a round, %d interleaved "
            "rounds.\n\n" % (s["n_starts"], s["rounds_starts"])
            + table(["preload", "µs a start, median [min–max]", "of the empty library's, median [min–max]"], rows))


def block_memory(results):
    s = results["settings"]
    rows = []
    for entry in results["memory"].values():
        over = entry.get("over_none_kib")
        rows.append([entry["label"], "%.1f" % (entry["kib"]["median"] / 1024),
                     "–" if not over else "%+.1f" % (over["median"] / 1024)])
    return ("%d live threads that each recorded one range (`bench/thread_memory`), resident memory, "
            "median of %d.\n\n" % (s["memory_threads"], s["rounds_memory"])
            + table(["library", "MB resident", "MB over no library"], rows))


def block_convert(results):
    s = results["settings"]
    rows = []
    for entry in results["convert"].values():
        if not isinstance(entry, dict):
            continue
        first = True
        for name, figures in entry["rows"].items():
            rows.append(["%s (%s NVTX ranges and marks)" % (entry["label"], "{:,}".format(entry["nvtx"]))
                         if first else "", "`%s`" % name,
                         spread(figures["s"], digits=3),
                         "%.1f MB" % (figures["bytes"] / 1e6), "{:,}".format(figures["events"])])
            first = False
    if not rows:
        return "Not measured in this run (%s).\n" % results["convert"].get("missing", "skipped")
    return ("Two SQLite exports made in the run, converted %d times each, interleaved; seconds, median "
            "[min–max].\n\n" % s["convert_runs"]
            + table(["export", "converter", "seconds", "output", "events written"], rows))


def block_sizes(results):
    sizes = results.get("trace_bytes", {})
    if not (sizes.get("trace") and sizes.get("pftrace")):
        return "Not measured in this run.\n"
    return ("The shim's recording rows of the run, every kind: `.json` %.1f MB, `.pftrace` %.1f MB (%.1f%%).\n"
            % (sizes["trace"] / 1e6, sizes["pftrace"] / 1e6, 100 * sizes["pftrace"] / sizes["trace"]))


def block_targets(results):
    rows = [[target, call, measured.replace("|", "/"),
             "**%s**" % verdict if verdict.startswith("NOT") else verdict]
            for target, call, measured, verdict in bench.targets(results)]
    text = table(["target", "call", "measured", "verdict"], rows)
    if results.get("checks"):
        text += "\nChecked in the same run: " + "; ".join(results["checks"]) + ".\n"
    return text


def size_text(size):
    """Bytes as the long traces' sizes are given: "200 MB", "1 GB"."""
    return "%g GB" % (size / 1e9) if size >= 1e9 else "%.0f MB" % (size / 1e6)


def block_long(results):
    long = results.get("long") or {}
    if not long.get("report") and not long.get("top"):
        return "Not measured in this run.\n"
    meta = long["meta"]
    text = ("Measured by `make bench-long` on %s, on `%s` (%s), at commit `%s`; the part took %.0f s%s.\n"
            % (meta["date"], meta["host"], meta["cpu"], meta.get("commit", "?"), meta.get("seconds", 0),
               " (a quick run: `BENCH_QUICK=1`)" if meta.get("quick") else ""))
    report = long.get("report")
    if report:
        rows = [["`%s`%s" % (row["input"], "" if row["build"] == "this" else " (baseline build)"),
                 "%.1f MB" % (row["bytes"] / 1e6), spread(row["peak"], 1e-6, 0), spread(row["cpu"], digits=2),
                 spread(row["wall"], digits=2)]
                for row in report["rows"].values()]
        runs = long["settings"]["long_runs"]
        text += ("\n`nvtxshim report` of %s frames as JSON (%s: `longtrace --size %s`), of the same events "
                 "as `.pftrace` and of the JSON gzipped, %s.\n\n"
                 % ("{:,}".format(report["frames"]), size_text(report["size"]),
                    size_text(report["size"]).replace(" ", "")[:-1],
                    "once each (each figure's median, min and max are the one run's)" if runs == 1
                    else "%d runs each, interleaved; median [min–max]" % runs)
                 + table(["input", "size", "peak memory, MB", "CPU, s", "wall, s"], rows))
    if long.get("top"):
        settings = long["settings"]
        rows = []
        for top in sorted(long["top"].values(), key=lambda t: (t["form"], t["size"])):
            intervals = top["intervals"]
            rows.append(["`.%s`" % top["form"], size_text(top["size"]), top["views"],
                         "–" if top.get("first_view") is None else "%.1f" % top["first_view"],
                         "–" if not intervals else "%.2f / %.2f" % (intervals["median"], intervals["max"]),
                         "–" if top["last_after_end"] is None else "%.1f" % top["last_after_end"],
                         "%.0f" % (top["peak"] / 1e6), "%.1f" % top["cpu"]])
        text += ("\n`nvtxshim top` while the trace grows by %g MB a second for %d s from the size shown "
                 "(written as fast as it goes up to it): the views of the file at that size or more, the "
                 "seconds from its reaching the size to the first (top catching up with what was written at "
                 "once) and from one view to the next, the last view's delay after the writer ended, and "
                 "top's own peak memory and CPU.\n\n"
                 % (settings["top_rate_mb"], settings["top_seconds"])
                 + table(["form", "from", "views", "first view, s", "between views, s: p50 / max",
                          "last view after the end, s", "top's peak, MB", "top's CPU, s"], rows))
    if long.get("checks"):
        text += "\nChecked in the same run: " + "; ".join(long["checks"]) + ".\n"
    return text


BLOCKS = {
    "run": block_run,
    "calls": block_calls,
    "descriptors": lambda results: block_calls(results, device=False),
    "added": block_added,
    "floor": block_floor,
    "tools": block_tools,
    "harness": block_harness,
    "starts": block_starts,
    "memory": block_memory,
    "convert": block_convert,
    "sizes": block_sizes,
    "targets": block_targets,
    "long": block_long,
}

# What a run of some parts alone brings into the checked-in results.
PART_KEYS = {"long": ["long"]}


def take(run_path, results_path):
    """RUN_PATH's results as the doc's: a whole run replaces them; a run of some parts alone
    (meta "only") replaces those parts' figures and keeps the rest."""
    with open(run_path) as f:
        run = json.load(f)
    only = run["meta"].get("only") or []
    if not only:
        shutil.copyfile(run_path, results_path)
        return
    unknown = [part for part in only if part not in PART_KEYS]
    if unknown:
        raise SystemExit("performance_doc: a run of %s alone cannot be taken into the results: take a whole "
                         "run (parts that can: %s)" % (", ".join(unknown), ", ".join(PART_KEYS)))
    with open(results_path) as f:
        results = json.load(f)
    for part in only:
        for key in PART_KEYS[part]:
            results[key] = run[key]
    with open(results_path, "w") as f:
        json.dump(results, f, indent=1)


def render(doc, results):
    """DOC with every block remade from RESULTS; a block of an unknown name is an error."""
    def remake(match):
        name = match.group(2)
        if name not in BLOCKS:
            raise SystemExit("performance_doc: no block named %r (known: %s)" % (name, ", ".join(BLOCKS)))
        return match.group(1) + BLOCKS[name](results) + match.group(4)
    made = BLOCK.sub(remake, doc)
    missing = set(BLOCKS) - {m[1] for m in BLOCK.findall(doc)}
    if missing:
        raise SystemExit("performance_doc: the doc has no block for %s" % ", ".join(sorted(missing)))
    return made


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", default=RESULTS)
    parser.add_argument("--doc", default=DOC)
    parser.add_argument("--check", action="store_true", help="exit 1 where the doc is not what the results make")
    parser.add_argument("--take", metavar="RUN", help="copy RUN's results.json to --results first")
    args = parser.parse_args()
    if args.take:
        take(args.take, args.results)
    with open(args.results) as f:
        results = json.load(f)
    with open(args.doc) as f:
        doc = f.read()
    made = render(doc, results)
    if args.check:
        if made != doc:
            old = dict((m[1], m[2]) for m in BLOCK.findall(doc))
            new = dict((m[1], m[2]) for m in BLOCK.findall(made))
            stale = [name for name in new if old.get(name) != new[name]]
            print("performance_doc: %s: blocks %s are not what %s makes (run scripts/performance_doc.py)"
                  % (os.path.relpath(args.doc, ROOT), ", ".join(stale), os.path.relpath(args.results, ROOT)),
                  file=sys.stderr)
            return 1
        return 0
    if made != doc:
        with open(args.doc, "w") as f:
            f.write(made)
    return 0


if __name__ == "__main__":
    sys.exit(main())
