"""A static HTML lineage report per tenant: one page per document, chunks highlighted on the source.

Each page shows the document's source revision (the bytes the chunks were cut from) with
every chunk's byte range as highlighted spans; hovering shows the chunk's id, heading path,
tokens, parser, chunker, model and run. ``page.html#chunk-<id>`` scrolls to that chunk and
highlights it (a few lines of inline script, no external assets). Paginated documents (PDF)
have no byte ranges: their page lists each chunk with its pages and boxes instead; Office
documents (DOCX, PPTX, XLSX) list each chunk with its zip parts and elements
(``word/document.xml p3..p7``, ``xl/worksheets/sheet1.xml A1..D40``).
"""

from __future__ import annotations

import hashlib
import html
import itertools
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from tessera.lineage_diff import diff_versions
from tessera.lineage_site import (
    FILTER_SCRIPT,
    SITE_COLUMNS,
    access_text,
    diff_name,
    diff_page,
    index_page,
    restricted,
)
from tessera.parsing.office_locate import describe, part_spans
from tessera.sources.confine import printable
from tessera.store.blobs import BlobStore
from tessera.store.index import TenantIndex

_COLUMNS = [
    "id", "doc_id", "uri", "revision", "content_type", "start", "end", "byte_start", "byte_end", "pages",
    "heading_path", "token_count", "parser_version", "chunker_version", "model_version", "run_id", "text",
]  # fmt: skip

_STYLE = """body{font:14px/1.5 system-ui,sans-serif;margin:0 2em}pre{white-space:pre-wrap}
.c{background:#e8f0fe;border-bottom:1px solid #8ab4f8}.c.alt{background:#fef7e0;border-color:#fdd663}
.c.hl{background:#fbbc04}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}
.restricted{color:#b3261e}.restricted-row{background:#fdf3f2}tr.added{background:#e6f4ea}
tr.removed{background:#fce8e6}tr.relabelled{background:#fef7e0}li.added{color:#137333}li.removed{color:#b3261e}
ul{margin:0;padding-left:1.2em}input{font:inherit;padding:2px 4px}"""

_SCRIPT = """function show(){var id=decodeURIComponent(location.hash.replace('#chunk-',''));
document.querySelectorAll('.hl').forEach(function(e){e.classList.remove('hl')});if(!id)return;
var parts=document.querySelectorAll('[data-c~="'+id+'"]');parts.forEach(function(e){e.classList.add('hl')});
var a=document.getElementById('chunk-'+id);if(a){a.scrollIntoView();}
var r=parts.length?parts[0].getBoundingClientRect():null;document.body.dataset.highlighted=id;
document.body.dataset.highlightedParts=String(parts.length);
document.body.dataset.visible=String(!!r&&r.top>=0&&r.top<window.innerHeight);
document.body.dataset.scrollY=String(Math.round(window.scrollY));}
window.addEventListener('hashchange',show);window.addEventListener('load',show);"""


def page_name(doc_id: str) -> str:
    return hashlib.sha256(doc_id.encode()).hexdigest()[:16] + ".html"


def _tip(r: dict[str, Any]) -> str:
    path = " > ".join(r["heading_path"] or []) or "-"
    return (
        f"{r['id'][:16]} | {path} | {r['token_count']} tokens | parser {r['parser_version']} | "
        f"chunker {r['chunker_version']} | model {r['model_version']} | run {r['run_id']}"
    )


def _source_page(raw: bytes, rows: list[dict[str, Any]]) -> str:
    cuts = sorted({0, len(raw), *(r["byte_start"] for r in rows), *(r["byte_end"] for r in rows)})
    ordered = sorted(rows, key=lambda r: (r["byte_start"], r["byte_end"]))
    starts = defaultdict(list)
    for r in ordered:
        starts[r["byte_start"]].append(r["id"])
    parts: list[str] = []
    for a, b in itertools.pairwise(cuts):
        parts += [f'<a class="anchor" id="chunk-{cid}"></a>' for cid in starts.get(a, [])]
        text = html.escape(raw[a:b].decode("utf-8", errors="replace"))
        inside = [(k, r) for k, r in enumerate(ordered) if r["byte_start"] <= a < r["byte_end"]]
        if not inside:
            parts.append(text)
            continue
        ids = " ".join(r["id"] for _, r in inside)
        tip = html.escape("\n".join(_tip(r) for _, r in inside), quote=True)
        alt = " alt" if inside[0][0] % 2 else ""
        parts.append(f'<span class="c{alt}" data-c="{ids}" title="{tip}">{text}</span>')
    return "<pre>" + "".join(parts) + "</pre>"


BOX = ("x0", "y0", "x1", "y1")
"""How the chunk table stores a page's box (``tessera/store/schema.py``)."""


def _paged_page(rows: list[dict[str, Any]]) -> str:
    office = any(r.get("parts") for r in rows)
    head = "zip parts and elements" if office else "pages and boxes"
    body = [f"<table><tr><th>chunk</th><th>{head}</th><th>text</th></tr>"]
    for r in sorted(rows, key=lambda r: r["start"]):
        where = "; ".join(f"p{p['page']} {[round(p[k], 1) for k in BOX]}" for p in r["pages"] or [])
        if r.get("parts"):
            where = describe(part_spans(r["parts"]))
        body.append(
            f'<tr><td><a id="chunk-{r["id"]}"></a><span data-c="{r["id"]}" title="{html.escape(_tip(r))}">'
            f"{r['id'][:16]}</span></td><td>{html.escape(where)}</td><td>{html.escape(r['text'])}</td></tr>"
        )
    return "".join(body) + "</table>"


DIFFS = 10
"""Diff pages written for the latest consecutive publications (each reads two versions)."""
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"
"""Every page asks for nothing beyond itself and the report's other pages (links only)."""


LOADED = """window.addEventListener('load',function(){document.body.dataset.resources=
String(performance.getEntriesByType('resource').length)});"""
"""Each page records how many resources it loaded (``data-resources``; the CSP allows none)."""


def _html(title: str, body: str, script: str = _SCRIPT, csp: str = CSP) -> str:
    policy = f'<meta http-equiv="Content-Security-Policy" content="{csp}">' if csp else ""
    return (
        f'<!doctype html><html><head><meta charset="utf-8">{policy}<title>{html.escape(title)}</title>'
        f"<style>{_STYLE}</style><script>{script}{LOADED}</script></head><body>{body}</body></html>"
    )


def write_report(
    index: TenantIndex,
    index_uri: str,
    out: Path,
    doc_ids: set[str] | None = None,
    diff: tuple[int, int] | None = None,
    diffs: int = DIFFS,
) -> Path:
    """Write ``index.html`` (search, documents, chunks, publications; :mod:`.lineage_site`),
    one page per document, a diff page for each of the last ``diffs`` pairs of consecutive
    publications and for ``diff`` (two table versions) into ``out``; returns the index page."""
    table = index.table()
    names = set() if table is None else set(table.schema.names)
    cols = [c for c in [*_COLUMNS, *SITE_COLUMNS, "parts"] if c in names]  # older tables lack some
    rows = [] if table is None else table.search().select(cols).limit(None).to_arrow().to_pylist()
    rows = [r for r in rows if doc_ids is None or r["doc_id"] in doc_ids]
    by_doc: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_doc[r["doc_id"]].append(r)
    out.mkdir(parents=True, exist_ok=True)
    blobs = BlobStore(index_uri)
    for doc_id, doc_rows in sorted(by_doc.items()):
        first = doc_rows[0]
        if first["byte_start"] >= 0:
            body = _source_page(blobs.get(index.tenant, first["revision"]), doc_rows)
        else:
            body = _paged_page(doc_rows)
        (out / page_name(doc_id)).write_text(
            _html(doc_id, _doc_head(doc_id, doc_rows) + body), encoding="utf-8"
        )
    pages = {doc_id: page_name(doc_id) for doc_id in by_doc}
    publications = index.publications()
    versions = sorted({int(p["table_version"]) for p in publications})
    pairs = set(list(itertools.pairwise(versions))[-diffs:] if diffs else []) | ({diff} if diff else set())
    for old, new in sorted(pairs):
        changes = diff_versions(index, old, new)
        title = f"Changes in {index.tenant}: {old} -> {new}"
        (out / diff_name(old, new)).write_text(_html(title, diff_page(changes, pages)), encoding="utf-8")
    title = f"Lineage of tenant {index.tenant}"
    body = index_page(index.tenant, rows, pages, publications, pairs)
    page = out / "index.html"
    page.write_text(_html(title, body, _SCRIPT + FILTER_SCRIPT), encoding="utf-8")
    return page


def _doc_head(doc_id: str, doc_rows: list[dict[str, Any]]) -> str:
    first = doc_rows[0]
    mark = (
        f' <b class="restricted">restricted: access set by {html.escape(first["acl_source"])}</b>'
        if restricted(first)
        else ""
    )
    return (
        f'<p><a href="index.html">index</a></p><h1>{html.escape(doc_id)}</h1>'
        f"<p>{html.escape(first['uri'])} · revision <code>{first['revision']}</code> · "
        f"{len(doc_rows)} chunks · model {first['model_version']}</p>"
        f'<p class="acl">{html.escape(access_text(first))}{mark}</p>'
    )


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")


def md_cell(text: str) -> str:
    """``text`` as literal Markdown table-cell content: the characters that make emphasis, code,
    links, HTML or a cell boundary escaped, ``&`` as an entity, control characters escaped, so a
    document id never splits a row or a column."""
    return _MD_SPECIAL.sub(r"\\\1", printable(text).replace("&", "&amp;"))


def provenance_sample(index: TenantIndex, doc_ids: set[str], n: int = 5) -> str:
    """A Markdown table of a few chunks of ``doc_ids``: where each came from and what made it."""
    table = index.table()
    if table is None or not doc_ids:
        return "no chunks changed"
    rows = [
        r
        for r in table.search()
        .select([c for c in [*_COLUMNS, "parts"] if c in table.schema.names])
        .limit(None)
        .to_arrow()
        .to_pylist()
        if r["doc_id"] in doc_ids
    ]
    lines = [
        "| chunk | document | bytes / pages | parser | chunker | model | run |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: (r["doc_id"], r["start"]))[:n]:
        where = (
            f"{r['byte_start']}-{r['byte_end']}"
            if r["byte_start"] >= 0
            else describe(part_spans(r["parts"]))
            if r.get("parts")
            else f"{len(r['pages'] or [])} page(s)"
        )
        lines.append(
            f"| `{r['id'][:12]}` | {md_cell(r['doc_id'])} @ {r['revision'][:8]} | {where} | "
            f"{r['parser_version']} | {r['chunker_version']} | {r['model_version']} | {r['run_id']} |"
        )
    return "\n".join(lines)
