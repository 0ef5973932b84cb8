"""README.md and docs/*.md stand alone: no link into ``../shared`` (a clone does not have
it), every relative link names a file that exists in the repository, and every
``#anchor`` of a link into a Markdown page names a heading of that page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])

# [text](target) and [text]: target (reference definitions); targets in <...> too.
_INLINE = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
_EXTERNAL = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//|#)")


_CODE_SPAN = re.compile(r"`[^`\n]+`")


def _links(text: str) -> list[str]:
    """Inline and reference links; a link written in a code span is an example, not a
    link (GitHub does not render it)."""
    text = _CODE_SPAN.sub("", text)
    return _INLINE.findall(text) + _REFERENCE.findall(text)


def _relative_targets(path: Path) -> list[tuple[str, Path]]:
    out = []
    for link in _links(path.read_text("utf-8")):
        if _EXTERNAL.match(link):
            continue
        target = link.split("#", 1)[0]
        out.append((link, (path.parent / target).resolve()))
    return out


def test_the_docs_exist() -> None:
    names = {p.name for p in DOCS if p.parent.name == "docs"}
    assert {"README.md", "architecture.md", "storage.md", "analyzers.md", "hooks.md",
            "decisions.md", "cli.md", "configuration.md", "serving.md", "search.md",
            "mcp.md", "oceanbase.md", "python.md", "topic-memory.md", "dashboard.md",
            "benchmarks.md", "testing.md", "security.md", "repository-memory.md"} <= names


def test_the_docs_index_lists_every_page() -> None:
    """docs/README.md is the index of docs/: every page there is linked from it."""
    index = ROOT / "docs" / "README.md"
    linked = {target for _, target in _relative_targets(index)}
    unlisted = [p.name for p in DOCS if p.parent.name == "docs" and p != index
                and p.resolve() not in linked]
    assert unlisted == []


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_link_or_path_points_into_shared(path: Path) -> None:
    text = path.read_text("utf-8")
    assert "../shared" not in text, f"{path.name} names ../shared, which a clone does not have"


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_names_an_issue(path: Path) -> None:
    """User documentation says what is, not which issue asked for it: the history is in
    Git."""
    found = re.findall(r"\bissues?\s+#?\d+|(?<![\w/&])#\d+\b", path.read_text("utf-8"),
                       re.IGNORECASE)
    assert found == [], f"{path.name} names issues: {found}"


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_to_an_existing_file(path: Path) -> None:
    broken = [link for link, target in _relative_targets(path) if not target.exists()]
    assert not broken, f"{path.name}: relative links to missing files: {broken}"


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_relative_link_leaves_the_repository(path: Path) -> None:
    outside = [link for link, target in _relative_targets(path)
               if not target.is_relative_to(ROOT)]
    assert not outside, f"{path.name}: links outside the repository: {outside}"


_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, markup and punctuation other than ``-``
    and ``_`` dropped, spaces made ``-``."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"[^\w\- ]", "", text.lower().replace("`", ""))
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown page (repeats get ``-1``, ``-2``, ...); headings
    inside fenced code blocks (shell comments) are not headings."""
    text = _FENCE.sub("", path.read_text("utf-8"))
    seen: dict[str, int] = {}
    out = set()
    for heading in _HEADING.findall(text):
        slug = _slug(heading)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_anchor_names_a_heading(path: Path) -> None:
    broken = []
    for link in _links(path.read_text("utf-8")):
        if "#" not in link or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^//", link):
            continue
        target, anchor = link.split("#", 1)
        page = (path.parent / target).resolve() if target else path
        if page.suffix == ".md" and page.exists() and anchor not in _anchors(page):
            broken.append(link)
    assert not broken, f"{path.name}: anchors that name no heading: {broken}"


def test_slugs_follow_github() -> None:
    assert _slug("Output, errors and exit codes") == "output-errors-and-exit-codes"
    assert _slug("Faster prompts: the hook daemon") == "faster-prompts-the-hook-daemon"
    assert _slug("Retrieval quality (LoCoMo)") == "retrieval-quality-locomo"
    assert _slug("With `powercontext serve`") == "with-powercontext-serve"
    assert _slug("config.toml: Topic processing and `serve`") == \
        "configtoml-topic-processing-and-serve"


def test_the_link_finder_sees_inline_reference_and_anchored_links() -> None:
    text = ('see [a](docs/a.md), [b](<docs/b.md>), [c](docs/c.md#part "t"), '
            "[d](https://x.org/y), [e](#top) `[x](#no)` [`h`](docs/h.md)\n"
            "[f]: ../shared/g.md\n")
    assert _links(text) == ["docs/a.md", "docs/b.md", "docs/c.md#part", "https://x.org/y",
                            "#top", "docs/h.md", "../shared/g.md"]


_CODE = re.compile(r"`([^`\s]+)`")
_FOLDERS = ("core", "ports", "adapters", "plugins", "sql", "app", "entrypoints", "tests", "bench",
            "docs")


def _existing(folder: Path, name: str) -> bool:
    """``name`` (a file or ``dir/``, maybe a glob such as ``hook*.py``) is under ``folder``."""
    name = name.rstrip("/")
    return any(True for _ in folder.rglob(name))


def test_every_path_in_the_architecture_page_exists() -> None:
    """docs/architecture.md names files in code spans: a repository path (``adapters/
    memory_commit.py``) must exist, and a bare file or folder name in a Layers row
    (``verify.py``, ``storage/``) must exist under that row's folder."""
    text = (ROOT / "docs" / "architecture.md").read_text("utf-8")
    # a folder the tests create and .gitignore names (tests/artifacts/) exists only
    # after a run: a fresh clone or a run of this test alone has none yet
    ignored = {line.strip() for line in (ROOT / ".gitignore").read_text("utf-8").splitlines()}
    missing = []
    for token in _CODE.findall(text):
        head = token.split("/", 1)[0]
        if token in ignored:
            continue
        if "/" in token and head in _FOLDERS and not _existing(ROOT / head, token.split(
                "/", 1)[1] or head) and not (ROOT / token).exists():
            missing.append(token)
    for line in text.splitlines():
        if not line.startswith("| `") or line.startswith("| folder"):
            continue
        cells = line.split("|")
        folder = ROOT / cells[1].strip().strip("`").rstrip("/")
        if not folder.is_dir():
            missing.append(cells[1].strip())
            continue
        for token in _CODE.findall(cells[3]):
            if "/" not in token.rstrip("/") and token.endswith((".py", "/")) \
                    and not _existing(folder, token):
                missing.append(f"{cells[1].strip()} {token}")
    assert missing == []
