"""The three HTML development-set formats, read by path, as one list of :class:`EvalPage`.

- ``wcxb``: ``dev/html/<id>.html.gz`` (or ``html/<id>.html[.gz]``) with
  ``dev/ground-truth/<id>.json``: gold ``ground_truth.main_content``, ``with``/``without``
  snippets, page type ``_internal.page_type.primary``.
- ``mozilla``: ``test/test-pages/<slug>/source.html`` (or ``<slug>/source.html``) with
  ``expected.html``; gold = the text nodes of ``expected.html``, a space between nodes. The
  hand-written single-feature fixtures listed in ``SOURCE.txt`` are left out; the CJK pages
  named in the README are flagged (they are also scored on a bag of characters).
- ``trafilatura``: ``evaldata_subset.json`` (``file``, ``with``, ``without``) and ``html/<file>``;
  snippet-based, no gold text.

:func:`detect_set` tells them apart by their files; :func:`load_pages` reads one.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from tessera.errors import InvalidArgument
from tessera.parsing.html_text import words

SETS = ("wcxb", "mozilla", "trafilatura")
NODE_GOLD_SETS = frozenset({"mozilla"})
"""Sets whose gold text is every text node of the gold markup with a space between nodes
(:func:`html_text_nodes`): ``<a>Mozilla</a>.`` is two tokens there, one in text that reads
as the page does. Tessera is also scored on its selection rendered that way
(``tessera_nodes``), as the readability-lxml peer's output always is."""
CJK_PAGES = frozenset(("gmw", "hukumusume", "pixnet", "qq", "yahoo-4", "youth"))
"""Mozilla's CJK test pages (its README: few spaces, also scored on a bag of characters)."""


@dataclass(frozen=True)
class EvalPage:
    set_name: str
    page_id: str
    page_type: str
    raw: bytes
    gold: str | None
    """Gold main text (None: snippet-only set)."""
    with_: tuple[str, ...] = ()
    without: tuple[str, ...] = ()
    cjk: bool = False


def detect_set(data_dir: Path) -> str:
    """``wcxb``, ``mozilla`` or ``trafilatura`` from the folder's files, else InvalidArgument."""
    if (data_dir / "evaldata_subset.json").is_file():
        return "trafilatura"
    if _wcxb_truth(data_dir) is not None:
        return "wcxb"
    if _mozilla_root(data_dir) is not None:
        return "mozilla"
    raise InvalidArgument(
        "--data",
        f"{str(data_dir)!r} is none of the known sets (wcxb: ground-truth/*.json, "
        "mozilla: */source.html + expected.html, trafilatura: evaldata_subset.json); pass --set",
    )


def load_pages(data_dir: Path, set_name: str | None = None) -> list[EvalPage]:
    name = set_name or detect_set(data_dir)
    if name == "wcxb":
        return _wcxb(data_dir)
    if name == "mozilla":
        return _mozilla(data_dir)
    if name == "trafilatura":
        return _trafilatura(data_dir)
    raise InvalidArgument("--set", f"unknown set {name!r}; expected one of {', '.join(SETS)}")


def _wcxb_truth(data_dir: Path) -> Path | None:
    for sub in ("dev/ground-truth", "ground-truth"):
        if (data_dir / sub).is_dir():
            return data_dir / sub
    return None


def _wcxb(data_dir: Path) -> list[EvalPage]:
    truth = _wcxb_truth(data_dir)
    if truth is None:
        raise InvalidArgument("--data", f"{str(data_dir)!r} has no ground-truth/ folder (wcxb)")
    html_dir = truth.parent / "html"
    pages = []
    for path in sorted(truth.glob("*.json")):
        meta = json.loads(path.read_text(encoding="utf-8"))
        gt = meta.get("ground_truth", {})
        page_type = meta.get("_internal", {}).get("page_type", {}).get("primary", "unknown")
        raw = _read_page(html_dir, path.stem)
        pages.append(
            EvalPage(
                "wcxb",
                path.stem,
                str(page_type),
                raw,
                str(gt.get("main_content", "")),
                tuple(str(s) for s in gt.get("with", []) or []),
                tuple(str(s) for s in gt.get("without", []) or []),
            )
        )
    return pages


def _read_page(html_dir: Path, stem: str) -> bytes:
    gz = html_dir / f"{stem}.html.gz"
    if gz.is_file():
        return gzip.decompress(gz.read_bytes())
    plain = html_dir / f"{stem}.html"
    if plain.is_file():
        return plain.read_bytes()
    raise InvalidArgument("--data", f"no page {stem}.html(.gz) in {str(html_dir)!r}")


def _mozilla_root(data_dir: Path) -> Path | None:
    for root in (data_dir / "test" / "test-pages", data_dir):
        if root.is_dir() and any((d / "source.html").is_file() for d in root.iterdir() if d.is_dir()):
            return root
    return None


_FIXTURE_LINE = re.compile(r"^\s+([a-z0-9][a-z0-9-]*(?:\s+[a-z0-9][a-z0-9-]*)*)\s*$")


def synthetic_fixtures(data_dir: Path) -> frozenset[str]:
    """The slugs that ``SOURCE.txt`` lists as hand-written fixtures (indented lines after the
    sentence that announces them)."""
    path = data_dir / "SOURCE.txt"
    if not path.is_file():
        return frozenset()
    out: set[str] = set()
    listing = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if "hand-written fixtures" in line:
            listing = True
            continue
        if listing:
            m = _FIXTURE_LINE.match(line)
            if m:
                out.update(m.group(1).split())
            elif out:  # the first line after the indented list ends it
                break
    return frozenset(out)


class TextNodes(HTMLParser):
    """The text nodes of a page in order (``parts``), outside scripts and styles; with
    ``breaks``, a ``" "`` part at each start and end of those tags."""

    def __init__(self, breaks: frozenset[str] = frozenset()) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.breaks = breaks
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        if tag in self.breaks:
            self.parts.append(" ")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.breaks:
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skip:
            self._skip -= 1
        if tag in self.breaks:
            self.parts.append(" ")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


BLOCK_BREAKS = words(
    "address article aside blockquote br caption dd details dialog div dl dt fieldset "
    "figcaption figure footer form h1 h2 h3 h4 h5 h6 header hr img li main nav ol p pre "
    "section summary table tbody td tfoot th thead tr ul"
)
"""Elements that a browser lays out as blocks (or breaks a line at)."""


def html_block_text(markup: str) -> str:
    """Text nodes in order, inline ones run together, a space at block boundaries: the text as
    a browser shows it (``<a>Mozilla</a>.`` reads ``Mozilla.``)."""
    if not markup.strip():
        return ""
    p = TextNodes(BLOCK_BREAKS)
    p.feed(markup)
    p.close()
    return " ".join("".join(p.parts).split())


def html_text_nodes(markup: str) -> str:
    """Every text node in document order, a space between nodes, whitespace collapsed."""
    p = TextNodes()
    p.feed(markup)
    p.close()
    return " ".join(" ".join(p.parts).split())


def _mozilla(data_dir: Path) -> list[EvalPage]:
    root = _mozilla_root(data_dir)
    if root is None:
        raise InvalidArgument("--data", f"{str(data_dir)!r} has no */source.html (mozilla)")
    skip = synthetic_fixtures(data_dir)
    pages = []
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        src, exp = d / "source.html", d / "expected.html"
        if d.name in skip or not src.is_file() or not exp.is_file():
            continue
        gold = html_text_nodes(exp.read_text(encoding="utf-8", errors="replace"))
        pages.append(EvalPage("mozilla", d.name, "article", src.read_bytes(), gold, cjk=d.name in CJK_PAGES))
    return pages


def _trafilatura(data_dir: Path) -> list[EvalPage]:
    data = json.loads((data_dir / "evaldata_subset.json").read_text(encoding="utf-8"))
    pages = []
    for _url, item in sorted(data.items(), key=lambda kv: kv[1]["file"]):
        raw = (data_dir / "html" / item["file"]).read_bytes()
        pages.append(
            EvalPage(
                "trafilatura",
                item["file"],
                "snippets",
                raw,
                None,
                tuple(item.get("with", []) or []),
                tuple(item.get("without", []) or []),
            )
        )
    return pages
