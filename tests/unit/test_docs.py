# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The documentation holds together: every relative link of README.md and docs/**/*.md (the generated
docs/reference/ aside) resolves to a file of the checkout, and to a heading of it where the link names an anchor;
the index (docs/README.md) lists every page; and no user page (README.md, docs/*.md - not docs/dev/, where the
development notes live) cites the project's issues ("issue 13", "#13")."""

from __future__ import annotations

import glob
import os
import re
import sys

import pytest
from ansible_collections.aifabric.acceptance.tests.unit.helpers import read

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir))
DOCS = os.path.join(ROOT, "docs")
GENERATED = os.path.join(DOCS, "reference")

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:.+?)\1")
_INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^()\s<>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REF_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")
# a citation of this project's issues; an upstream one names its repository (NVIDIA/nccl-tests#5) and is a source
ISSUE_WORD = re.compile(r"\bissues?\s+#?\d+", re.IGNORECASE)
ISSUE_HASH = re.compile(r"(?<![\w/.#&-])#\d+\b")


def user_pages():
    """README.md and docs/*.md: what users read (docs/dev/ and the generated reference are not)."""
    return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(DOCS, "*.md")))


def linked_pages():
    """Every Markdown page whose links are checked: README.md and docs/**/*.md less docs/reference/."""
    pages = [os.path.join(ROOT, "README.md")]
    for path in sorted(glob.glob(os.path.join(DOCS, "**", "*.md"), recursive=True)):
        if not os.path.abspath(path).startswith(GENERATED + os.sep):
            pages.append(path)
    return pages


def prose_lines(text, blank_code=True):
    """(line number, line) of the text outside code blocks, code spans blanked (``blank_code``)."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        match = _FENCE.match(line)
        if fence:
            if match and match.group(2)[0] == fence[0] and len(match.group(2)) >= len(fence):
                fence = None
            continue
        if match:
            fence = match.group(2)
            continue
        if line.startswith("    ") and not line.strip().startswith(("-", "*", "|")) and line.strip():
            # an indented code block (outside a list item, which this project's pages indent by 2)
            continue
        yield number, _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line) if blank_code else line


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation other than - and _ dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)      # a link in a heading: its text
    text = text.replace("`", "").lower()
    return "".join(c for c in text if c.isalnum() or c in "-_ ").replace(" ", "-")


def anchors(path):
    """Every anchor of a Markdown page: its headings' slugs (GitHub numbers repeated ones -1, -2, ...), <a id>."""
    seen, found = {}, set()
    for _number, line in prose_lines(read(path), blank_code=False):
        match = _HEADING.match(line)
        if match:
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if not count else "%s-%d" % (base, count))
        found.update(_HTML_ANCHOR.findall(line))
    return found


def links(path):
    """(line number, target) of every relative link of a page (URLs and mail addresses aside)."""
    out = []
    for number, line in prose_lines(read(path)):
        targets = _INLINE_LINK.findall(line) + _REF_LINK.findall(line)
        for target in targets:
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
                continue        # https:, mailto:, ...
            out.append((number, target))
    return out


def broken_links(path):
    """What is wrong with each relative link of ``path``: a file that does not exist, an anchor it lacks."""
    problems = []
    here = os.path.dirname(path)
    for number, target in links(path):
        file_part, _sep, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(here, file_part)) if file_part else path
        where = "%s:%d: %s" % (os.path.relpath(path, ROOT), number, target)
        if not os.path.exists(dest):
            problems.append("%s: no such file %s" % (where, os.path.relpath(dest, ROOT)))
        elif not dest.startswith(ROOT + os.sep) and dest != ROOT:
            problems.append("%s: outside the checkout" % where)
        elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
            problems.append("%s: %s has no heading with the anchor #%s" % (where, os.path.relpath(dest, ROOT), anchor))
    return problems


def issue_citations(path):
    """(line number, text) of every citation of the project's issues in a page (code included: a page is read)."""
    found = []
    for number, line in enumerate(read(path).splitlines(), 1):
        found.extend((number, m.group(0)) for m in ISSUE_WORD.finditer(line))
        found.extend((number, m.group(0)) for m in ISSUE_HASH.finditer(line))
    return found


@pytest.mark.parametrize("path", linked_pages(), ids=lambda p: os.path.relpath(p, ROOT))
def test_every_relative_link_resolves(path):
    assert broken_links(path) == []


@pytest.mark.parametrize("path", user_pages(), ids=lambda p: os.path.relpath(p, ROOT))
def test_user_pages_cite_no_issue(path):
    assert issue_citations(path) == [], "issue numbers belong in the changelog or docs/dev/"


def test_the_index_lists_every_page():
    index = os.path.join(DOCS, "README.md")
    listed = set(os.path.normpath(os.path.join(DOCS, t.partition("#")[0])) for _n, t in links(index))
    pages = set(p for p in glob.glob(os.path.join(DOCS, "*.md")) if p != index)
    assert sorted(os.path.relpath(p, ROOT) for p in pages - listed) == []


# the checks themselves, on pages made here: a check that never fails would pass any tree


def test_a_missing_file_and_a_missing_anchor_are_found(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", str(tmp_path))
    (tmp_path / "b.md").write_text("# Title\n\n## Time limits (a host that goes silent)\n\n## Notes\n\n## Notes\n")
    page = tmp_path / "a.md"
    page.write_text("see [b](b.md#time-limits-a-host-that-goes-silent), [n](b.md#notes-1), [web](https://x.org/y)\n"
                    "`[not a link](nowhere.md)`\n\n```\n[in code](gone.md)\n```\n"
                    "[gone](gone.md) and [bad](b.md#no-such-heading) and [self](#a-heading)\n\n# A heading\n")
    problems = broken_links(str(page))
    assert len(problems) == 2, problems
    assert "no such file gone.md" in problems[0]
    assert "has no heading with the anchor #no-such-heading" in problems[1]


def test_issue_citations_are_found_and_upstream_sources_are_not(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("Since issue 13 the runner ...\n(issue 22's fix), see #13.\n"
                    "A real log (NVIDIA/k8s-device-plugin#303), `rocm-issue5571-x` fixture, #wrong column, "
                    "[anchor](#inventory-contract), &#34; an entity.\n")
    assert [text for _n, text in issue_citations(str(page))] == ["issue 13", "issue 22", "#13"]


def test_slugs_follow_github():
    assert slug("The verdict reaches the caller (`acceptance_fail_on`)") == "the-verdict-reaches-the-caller-acceptance_fail_on"
    assert slug("5. Where the report goes") == "5-where-the-report-goes"
    assert slug("GPU: 2x H200") == "gpu-2x-h200"
