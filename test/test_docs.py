"""The documents' links (README.md, docs/, the READMEs beside the code): every relative link
names a file of the repository, and every #anchor a heading of the document it points into
(GitHub's slugs: lower case, punctuation but hyphens dropped, spaces as hyphens)."""
import glob
import json
import os
import re
import subprocess
import sys

from conftest import ROOT

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def documents():
    found = ["README.md", "bench/README.md", "docker/README.md"] + sorted(glob.glob("docs/*.md", root_dir=ROOT)) + \
        sorted(glob.glob("test/*/README.md", root_dir=ROOT)) + ["python/README.md"]
    return [path for path in found if os.path.exists(os.path.join(ROOT, path))]


def slug(heading):
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path):
    with open(path, encoding="utf-8") as f:
        text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
    seen, slugs = {}, set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.M):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        slugs.add(base if not count else "%s-%d" % (base, count))
    return slugs


def broken_links(document):
    path = os.path.join(ROOT, document)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        linked = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
        if not os.path.exists(linked):
            broken.append(target)
        elif anchor and linked.endswith(".md") and anchor not in anchors(linked):
            broken.append(target)
    return broken


def test_every_link_of_the_documents_resolves():
    assert documents()
    assert {document: broken_links(document) for document in documents()} == \
        {document: [] for document in documents()}


def test_a_broken_link_or_anchor_is_caught(tmp_path, monkeypatch):
    import test_docs
    bad = tmp_path / "bad.md"
    bad.write_text("# Title\n[fine](#title) [gone](missing.md) [no such](#nowhere)\n")
    monkeypatch.setattr(test_docs, "ROOT", str(tmp_path))
    assert broken_links("bad.md") == ["missing.md", "#nowhere"]


def test_the_readme_is_a_front_door_that_maps_every_doc():
    """README.md stays short (at most 300 lines) and links each document in docs/."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    assert len(text.splitlines()) <= 300
    linked = set(LINK.findall(text))
    assert [doc for doc in sorted(glob.glob("docs/*.md", root_dir=ROOT)) if doc not in linked] == []


PERFORMANCE_DOC = os.path.join(ROOT, "scripts", "performance_doc.py")


def performance_check(doc=None, results=None):
    argv = [sys.executable, PERFORMANCE_DOC, "--check"]
    argv += ["--doc", str(doc)] if doc else []
    argv += ["--results", str(results)] if results else []
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def test_the_performance_doc_is_what_the_checked_in_bench_run_makes():
    """docs/performance.md's tables are scripts/performance_doc.py's of bench/results.json, and
    they name the run: its date, machine and commit."""
    done = performance_check()
    assert done.returncode == 0, done.stderr
    with open(os.path.join(ROOT, "bench", "results.json")) as f:
        meta = json.load(f)["meta"]
    with open(os.path.join(ROOT, "docs", "performance.md"), encoding="utf-8") as f:
        doc = f.read()
    assert not meta["quick"] and meta.get("commit", "?") != "?"
    for fact in (meta["date"], meta["host"], meta["commit"]):
        assert fact in doc


def test_a_figure_edited_by_hand_or_a_new_run_is_caught(tmp_path):
    with open(os.path.join(ROOT, "docs", "performance.md"), encoding="utf-8") as f:
        doc = f.read()
    # a figure of the per-call table changed by hand
    table = doc.index("<!-- bench:calls -->")
    figure = re.compile(r"\| (\d+\.\d) \|").search(doc, table)
    edited = tmp_path / "edited.md"
    edited.write_text(doc[:figure.start(1)] + "%.1f" % (float(figure.group(1)) + 1) + doc[figure.end(1):])
    done = performance_check(doc=edited)
    assert done.returncode == 1 and "calls" in done.stderr, done.stderr
    # the doc left as it is while the results change: another run's harness
    with open(os.path.join(ROOT, "bench", "results.json")) as f:
        results = json.load(f)
    results["harness"]["none"]["fps"]["median"] += 1
    (tmp_path / "results.json").write_text(json.dumps(results))
    done = performance_check(results=tmp_path / "results.json")
    assert done.returncode == 1 and "harness" in done.stderr, done.stderr


def schema_categories():
    """{domain name: [category names, in schema.h's order]} from nvs_category_name."""
    with open(os.path.join(ROOT, "libnvtxshim", "schema.h")) as f:
        schema = f.read()
    domains = dict(re.findall(r'case NVS_DOMAIN_(\w+): return "([\w ]+)";', schema))
    body = schema[schema.index("nvs_category_name(enum nvs_domain"):]
    body = body[:body.index("\n}\n")]
    found, current = {}, []
    for line in body.splitlines():
        domain = re.match(r"\s*case NVS_DOMAIN_(\w+):\s*$", line)
        if domain:
            current.append(domain.group(1))
            continue
        name = re.search(r'return "([\w ]+)";', line)
        if name:
            for each in current:
                found.setdefault(domains[each], []).append(name.group(1))
        elif "return NULL" in line:             # the end of a domain's (or domains') group
            current = []
    return found


def test_the_user_guide_names_every_category_of_every_domain():
    """The categories table of the user guide (What you see) against schema.h, the one place the
    library and the command spell them: each domain with its categories, none left out."""
    with open(os.path.join(ROOT, "docs", "user-guide.md"), encoding="utf-8") as f:
        guide = f.read()
    table = guide[guide.index("| domain | categories |"):]
    table = table[:table.index("\n\n")]
    documented = {}
    for row in table.splitlines()[2:]:
        domains, categories = row.strip("|").split("|", 1)
        # the category names are the backticked words outside parentheses
        names = re.findall(r"`([\w ]+)`", re.sub(r"\([^)]*\)", "", categories))
        for domain in re.findall(r"`(\w+)`", domains):
            documented[domain] = names
    assert documented == schema_categories()
