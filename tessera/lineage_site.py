"""The lineage report's index and diff pages (the document pages are :mod:`tessera.lineage_html`).

``index.html`` holds a search box over every document and chunk (``index.html?q=words`` opens
filtered), the documents with their access (a document whose access a policy file set, rather
than the tenant default, is marked ``restricted``), a chunk table (parser, chunker, model, run,
tokens, flags, access), and the publications, each linked to a diff page: which documents'
chunks were added, removed or kept between two publications, and why
(:mod:`tessera.lineage_diff`). Every page is static, with inline style and script and a
Content-Security-Policy that forbids any other request.
"""

from __future__ import annotations

import html
from collections import defaultdict
from typing import Any

from tessera.lineage_diff import PublicationDiff

SITE_COLUMNS = ["readers", "groups", "acl_source", "flags"]
"""Read besides the document pages' columns."""

FILTER_SCRIPT = """function filter(){var q=document.getElementById('q').value.toLowerCase().split(/\\s+/)
.filter(Boolean);var n=0;document.querySelectorAll('[data-search]').forEach(function(e){
var t=e.dataset.search;var hit=q.every(function(w){return t.indexOf(w)>=0});e.hidden=!hit;
if(hit&&e.dataset.kind==='chunk')n++});document.body.dataset.matches=String(n);}
window.addEventListener('load',function(){var q=new URLSearchParams(location.search).get('q');
if(q)document.getElementById('q').value=q;filter();
document.getElementById('q').addEventListener('input',filter);});"""


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def access_text(r: dict[str, Any]) -> str:
    groups, readers = r.get("groups") or [], r.get("readers") or []
    return f"groups: {', '.join(groups) or '-'}; readers: {', '.join(readers) or '-'}"


def restricted(r: dict[str, Any]) -> bool:
    """Access set by a policy file (``_access.yaml``) rather than the tenant default."""
    return bool(r.get("acl_source")) and r.get("acl_source") != "default"


def _access_cell(r: dict[str, Any]) -> str:
    badge = f' <b class="restricted">restricted ({esc(r["acl_source"])})</b>' if restricted(r) else ""
    return f'<td class="acl">{esc(access_text(r))}{badge}</td>'


def _search_key(*parts: object) -> str:
    return esc(" ".join(str(p) for p in parts).lower())


def index_page(
    tenant: str,
    rows: list[dict[str, Any]],
    pages: dict[str, str],
    publications: list[dict[str, Any]],
    diffs: set[tuple[int, int]],
) -> str:
    """The body of ``index.html``; ``pages`` maps a document id to its page's file name,
    ``diffs`` are the (old, new) versions whose diff pages exist."""
    by_doc: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_doc[r["doc_id"]].append(r)
    docs = ["<h2>Documents</h2><table id=documents><tr><th>document</th><th>revision</th><th>chunks</th>"]
    docs.append("<th>parser</th><th>access</th></tr>")
    for doc_id, doc_rows in sorted(by_doc.items()):
        r = doc_rows[0]
        cls = ' class="restricted-row"' if restricted(r) else ""
        docs.append(
            f'<tr data-kind="document" data-search="{_search_key(doc_id, r["uri"], r["revision"])}"{cls}>'
            f'<td><a href="{pages[doc_id]}">{esc(doc_id)}</a></td>'
            f"<td><code>{esc(r['revision'][:12])}</code></td>"
            f"<td>{len(doc_rows)}</td><td>{esc(r['parser_version'])}</td>{_access_cell(r)}</tr>"
        )
    docs.append("</table>")
    chunks = ["<h2>Chunks</h2><table id=chunks><tr><th>chunk</th><th>document</th><th>heading path</th>"]
    chunks.append(
        "<th>tokens</th><th>chunker</th><th>model</th><th>run</th><th>flags</th><th>access</th></tr>"
    )
    for r in sorted(rows, key=lambda r: (r["doc_id"], r["start"])):
        path = " > ".join(r["heading_path"] or [])
        key = _search_key(r["id"], r["doc_id"], path, " ".join(r["flags"] or []), r["text"][:400])
        cls = ' class="restricted-row"' if restricted(r) else ""
        chunks.append(
            f'<tr data-kind="chunk" data-id="{esc(r["id"])}" data-search="{key}"{cls}>'
            f'<td><a href="{pages[r["doc_id"]]}#chunk-{esc(r["id"])}">'
            f"<code>{esc(r['id'][:16])}</code></a></td>"
            f"<td>{esc(r['doc_id'])}</td><td>{esc(path)}</td><td>{r['token_count']}</td>"
            f"<td>{esc(r['chunker_version'])}</td><td>{esc(r['model_version'])}</td><td>{esc(r['run_id'])}</td>"
            f"<td>{esc(', '.join(r['flags'] or []))}</td>{_access_cell(r)}</tr>"
        )
    chunks.append("</table>")
    pubs = ["<h2>Publications</h2><ul id=publications>"]
    versions = sorted({int(p["table_version"]) for p in publications})
    for p in sorted(publications, key=lambda p: int(p["table_version"])):
        v = int(p["table_version"])
        older = [x for x in versions if x < v]
        pair = (older[-1], v) if older else None
        link = f' · <a href="{diff_name(*pair)}">changes since {pair[0]}</a>' if pair in diffs else ""
        pubs.append(
            f"<li>version {v} · {esc(p['kind'])} · run {esc(p['run_id'])} · +{p['inserted']}/"
            f"~{p['updated']}/-{p['deleted']} chunks{link}</li>"
        )
    pubs.append("</ul>")
    box = (
        '<p><input id="q" type="search" placeholder="search documents and chunks" size="60"> '
        f"{len(by_doc)} documents, {len(rows)} chunks</p>"
    )
    return f"<h1>Lineage of tenant {esc(tenant)}</h1>{box}{''.join(docs)}{''.join(chunks)}{''.join(pubs)}"


def diff_name(old: int, new: int) -> str:
    return f"diff-{old}-{new}.html"


def diff_page(diff: PublicationDiff, pages: dict[str, str]) -> str:
    """The body of a diff page: one row per document that changed, with its chunk ids."""
    head = (
        f"<h1>Changes in {esc(diff.tenant)} from version {diff.old_version} to {diff.new_version}</h1>"
        f"<p>{len(diff.documents)} documents changed · chunks +{diff.added} -{diff.removed} · "
        f'table {esc(diff.table)} · <a href="index.html">index</a></p>'
    )
    body = ["<table id=diff><tr><th>document</th><th>status</th><th>why</th><th>chunks</th></tr>"]
    for d in diff.documents:
        name = pages.get(d.doc_id)
        doc = f'<a href="{name}">{esc(d.doc_id)}</a>' if name else esc(d.doc_id)
        ids = [f'<li class="added" data-id="{esc(c)}">+ {esc(c[:16])}</li>' for c in d.added]
        ids += [f'<li class="removed" data-id="{esc(c)}">- {esc(c[:16])}</li>' for c in d.removed]
        body.append(
            f'<tr class="{d.status}" data-doc="{esc(d.doc_id)}"><td>{doc}</td><td>{d.status}</td>'
            f"<td>{esc(d.why)}</td><td>{d.kept} kept<ul>{''.join(ids)}</ul></td></tr>"
        )
    body.append("</table>")
    return head + "".join(body)
