"""The documents' links (README.md, docs/, the READMEs beside the code): every relative link
names a file of the repository, and every #anchor a heading of the document it points into
(GitHub's slugs: lower case, punctuation but hyphens dropped, spaces as hyphens)."""
import glob
import os
import re

from conftest import ROOT

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def documents():
    found = ["README.md", "bench/README.md"] + sorted(glob.glob("docs/*.md", root_dir=ROOT)) + \
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
