"""The documentation holds together: README.md links every guide under docs/, the
measurements index (docs/measurements/README.md) links every dated page, and every
relative link in README.md and docs/ names a file (and a heading) that exists.

A page nobody links is a page nobody finds; a link to a moved page is a dead end.
"""

import os
import re

import pytest

from conftest import REPO_ROOT

MEASUREMENTS = "measurements"
INDEX = os.path.join("docs", MEASUREMENTS, "README.md")
# [text](target) outside code: the target up to a space or the closing parenthesis.
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^(```|~~~)")


def markdown_files(root):
    """Every .md under root/docs and root/README.md, as paths relative to root."""
    found = ["README.md"]
    for folder, _dirs, files in os.walk(os.path.join(root, "docs")):
        found.extend(os.path.relpath(os.path.join(folder, n), root)
                     for n in files if n.endswith(".md"))
    return sorted(found)


def prose(text, code_spans=False):
    """text without its fenced code blocks, and without its inline code spans unless
    code_spans (a heading's code is part of its anchor)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line if code_spans else re.sub(r"`[^`]*`", "", line))
    return "\n".join(lines)


def links(root, page):
    """(target path relative to root, anchor) of each relative link of `page`."""
    with open(os.path.join(root, page), encoding="utf-8") as f:
        text = prose(f.read())
    found = []
    for target in _LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        resolved = (os.path.normpath(os.path.join(os.path.dirname(page), path)) if path
                    else page)
        found.append((resolved, anchor))
    return found


def slugs(root, page):
    """The anchors GitHub gives the headings of `page`."""
    with open(os.path.join(root, page), encoding="utf-8") as f:
        text = prose(f.read(), code_spans=True)
    found = set()
    for line in text.splitlines():
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            slug = re.sub(r"[^\w\- ]", "", heading.group(1).lower()).replace(" ", "-")
            found.add(slug)
    return found


def unlinked(root):
    """Guides README.md does not link, and dated pages the measurements index does not."""
    from_readme = {path for path, _ in links(root, "README.md")}
    index = os.path.join(root, INDEX)
    from_index = {path for path, _ in links(root, INDEX)} if os.path.exists(index) else set()
    missing = []
    for page in markdown_files(root):
        if page == "README.md":
            continue
        in_measurements = page.split(os.sep)[1:2] == [MEASUREMENTS]
        if page == INDEX or not in_measurements:
            if page not in from_readme and not (page == INDEX and os.path.join(
                    "docs", MEASUREMENTS) in from_readme):
                missing.append("%s: not linked from README.md" % page)
        elif page not in from_index:
            missing.append("%s: not linked from %s" % (page, INDEX))
    return missing


def broken(root):
    """Each relative link whose file or heading does not exist."""
    found = []
    for page in markdown_files(root):
        for path, anchor in links(root, page):
            full = os.path.join(root, path)
            if not os.path.exists(full):
                found.append("%s: link to %s: no such file" % (page, path))
            elif anchor and path.endswith(".md") and anchor not in slugs(root, path):
                found.append("%s: link to %s#%s: no such heading" % (page, path, anchor))
    return found


def test_every_page_is_linked():
    assert unlinked(REPO_ROOT) == []


def test_every_link_leads_somewhere():
    assert broken(REPO_ROOT) == []


@pytest.fixture
def tree(tmp_path):
    """A small checkout: README.md, a guide, the measurements index and a dated page."""
    (tmp_path / "docs" / MEASUREMENTS).mkdir(parents=True)
    (tmp_path / "README.md").write_text("[Guide](docs/guide.md)\n"
                                        "[Measurements](docs/measurements/README.md)\n")
    (tmp_path / "docs" / "guide.md").write_text("# A guide\n\n## Its rule\n\n"
                                                "[figures](measurements/2026-01-01-x.md)\n")
    (tmp_path / "docs" / MEASUREMENTS / "README.md").write_text("[x](2026-01-01-x.md)\n")
    (tmp_path / "docs" / MEASUREMENTS / "2026-01-01-x.md").write_text(
        "# x\n\n[the rule](../guide.md#its-rule)\n")
    return tmp_path


def test_the_checks_find_what_they_must(tree):
    assert unlinked(str(tree)) == [] and broken(str(tree)) == []
    (tree / "docs" / "orphan.md").write_text("# nobody links me\n")
    (tree / "docs" / MEASUREMENTS / "2026-01-02-y.md").write_text("# y\n")
    (tree / "docs" / "guide.md").write_text("[gone](uprobe.md) [no heading](#nowhere)\n"
                                            "`[in code](nothing.md)`\n")
    assert unlinked(str(tree)) == [
        "docs/measurements/2026-01-02-y.md: not linked from docs/measurements/README.md",
        "docs/orphan.md: not linked from README.md"]
    assert broken(str(tree)) == [
        "docs/guide.md: link to docs/uprobe.md: no such file",
        "docs/guide.md: link to docs/guide.md#nowhere: no such heading",
        "docs/measurements/2026-01-01-x.md: link to docs/guide.md#its-rule: no such heading"]
