"""Every relative link of the README and of docs/ leads somewhere: the file exists and, for a
``#anchor``, the page has a heading whose GitHub anchor it is. Pure and fast: it reads the pages
and applies GitHub's rules for heading anchors (github-slugger's)."""

from __future__ import annotations

import glob
import os
import re
import unicodedata

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGES = ["README.md", *sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))]

HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
LINK = re.compile(r"!?\[([^\]]*)\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
FENCE = re.compile(r"^\s*(```|~~~)")


def prose_lines(text: str) -> list[str]:
    """The page's lines outside code: fenced blocks and indented (4 spaces or more) lines dropped."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced or line.startswith(("    ", "\t")):
            continue
        lines.append(line)
    return lines


def heading_text(markdown: str) -> str:
    """A heading as GitHub renders it to text: code spans kept without their backticks, links as
    their text, emphasis marks and HTML tags dropped."""
    text = CODE_SPAN.sub(lambda m: m.group(2).strip(), markdown)
    text = LINK.sub(lambda m: m.group(1), text)
    text = re.sub(r"<[^>]+>", "", text)
    return re.sub(r"(\*\*|\*|__)", "", text)


def slug(text: str) -> str:
    """github-slugger: lower case; every character but letters, digits, marks, '_', '-' and space
    removed; each space a '-'."""
    kept = []
    for char in text.lower():
        category = unicodedata.category(char)
        if char in "_- " or category[0] in "LNM":
            kept.append(char)
    return "".join(kept).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors of a page's headings, a repeated one numbered as GitHub numbers it (-1, -2, …)."""
    seen: dict[str, int] = {}
    found = set()
    for line in prose_lines(text):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(heading_text(match.group(2)))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(text: str) -> list[str]:
    """The link targets of a page's prose (images too), code spans left out."""
    found = []
    for line in prose_lines(text):
        found.extend(match.group(2) for match in LINK.finditer(CODE_SPAN.sub("", line)))
    return found


def broken(page: str, root: str = ROOT) -> list[str]:
    """Each relative link of ``page`` (a path under ``root``) that leads nowhere, with why."""
    with open(os.path.join(root, page)) as handle:
        text = handle.read()
    problems = []
    for target in links(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not ours to check
            continue
        path, _, anchor = target.partition("#")
        where = os.path.normpath(os.path.join(os.path.dirname(os.path.join(root, page)), path)) if path else None
        if where is not None and not os.path.exists(where):
            problems.append(f"{target}: no such file")
            continue
        if not anchor:
            continue
        linked = os.path.join(root, page) if where is None else where
        if not linked.endswith(".md"):
            problems.append(f"{target}: an anchor into a file that is not a page")
            continue
        with open(linked) as handle:
            if anchor not in anchors(handle.read()):
                problems.append(f"{target}: no heading with that anchor")
    return problems


def test_slugs_follow_githubs_rules():
    assert slug(heading_text("Forks, `os._exit`, `os.execv`")) == "forks-os_exit-osexecv"
    assert slug(heading_text("Set up and try it (fresh machine)")) == "set-up-and-try-it-fresh-machine"
    assert slug(heading_text("The job's answer")) == "the-jobs-answer"
    assert slug(heading_text("Inference: a function as the step (`--target`)")) == (
        "inference-a-function-as-the-step---target"
    )
    assert slug(heading_text("Parsing later: `--analyse DIR`")) == "parsing-later---analyse-dir"
    assert slug(heading_text("Steps 3–4 of **every** [rank](x.md)")) == "steps-34-of-every-rank"
    assert anchors("# A\n## A\n    # not a heading\n```\n# nor this\n```\n## A\n") == {"a", "a-1", "a-2"}


def test_links_leave_out_code():
    text = "see [a](a.md) and `[b](b.md)`\n\n    [c](c.md)\n```\n[d](d.md)\n```\n![e](e.png)\n"
    assert links(text) == ["a.md", "e.png"]


def test_a_broken_link_is_found(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "x.md").write_text("# X\n## Real part\n")
    (tmp_path / "README.md").write_text(
        "[ok](docs/x.md#real-part) [gone](docs/y.md) [bad](docs/x.md#unreal) [self](#top) [web](https://e.org)\n"
    )
    assert broken("README.md", str(tmp_path)) == [
        "docs/y.md: no such file",
        "docs/x.md#unreal: no heading with that anchor",
        "#top: no heading with that anchor",
    ]


def test_the_docs_are_there():
    assert "README.md" in PAGES and len(PAGES) > 5


@pytest.mark.parametrize("page", PAGES)
def test_every_relative_link_resolves(page):
    assert broken(page) == [], f"{page}: links that lead nowhere"
