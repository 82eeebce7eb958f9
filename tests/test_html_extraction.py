"""Main-content extraction guarantees (issue 15): the main text survives the boilerplate rules,
thin extractions fall back loudly, and every block keeps an exact byte range.

Fixtures are built here. Each guarantee is attacked from several sides (class words around
the article, link-dense parents, prose split between link-dense boxes, ``&nbsp;`` spacers,
generated pages) and checked against legitimate pages that must come out unchanged.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from tessera.parsing.html import HtmlParser, html_slice_matches
from tessera.parsing.html_boiler import DEFAULT_PARAMS, ContentParams, boiler_name
from tessera.types import ParsedDocument, SourceDocument, sha256_hex

PROSE = [
    "The river valley was settled by farmers who terraced the slopes and built stone walls "
    "that still mark the fields today.",
    "Over three centuries the terraces held back erosion, and the villages grew around the "
    "mills that the water turned.",
    "When the railway arrived, the mills closed one by one, yet the walls remained as a record "
    "of the work of many generations.",
    "Historians now read the walls like a ledger, dating each course of stone by its mortar and "
    "by the tools that shaped it.",
]
NAV = "".join(f'<li><a href="/section/{k}">Section number {k}</a></li>' for k in range(30))


def _doc(raw: bytes) -> SourceDocument:
    return SourceDocument(
        tenant="t",
        doc_id="p.html",
        uri="file:///p.html",
        revision=sha256_hex(raw),
        content_type="text/html",
        readers=(),
        groups=(),
    )


def parse(page: str, params: ContentParams | None = None) -> tuple[ParsedDocument, bytes]:
    raw = page.encode("utf-8")
    return HtmlParser(params=params).parse(_doc(raw), raw), raw


def paras(items: list[str]) -> str:
    return "".join(f"<p>{t}</p>" for t in items)


def assert_exact(parsed: ParsedDocument, raw: bytes) -> None:
    """Every block holds text and its byte range holds that text; ranges are in order."""
    last = 0
    for b in parsed.blocks:
        piece = parsed.text[b.start : b.end]
        assert piece.strip(), (b, piece)
        b0, b1 = parsed.offsets.span(parsed.text, b.start, b.end)
        assert last <= b0 < b1 <= len(raw)
        assert html_slice_matches(raw, b0, b1, piece), (piece, raw[b0:b1])
        last = b0


def codes(parsed: ParsedDocument) -> list[str]:
    return [w.split(":", 1)[0] for w in parsed.warnings]


# -- class words ------------------------------------------------------------------------------


def test_sidebar_class_container_holding_the_article_is_kept() -> None:
    # the wrapper holds well under half of the page's prose, so only the class rule decides
    more = [t.replace("walls", "hedges") for t in PROSE[:3]]
    page = (
        f"<html><body><nav><ul>{NAV}</ul></nav>"
        f'<div class="page content-has-sidebar"><div class="post">{paras(PROSE[:2])}</div>'
        f'<div class="sidebar"><ul>{NAV}</ul></div></div>'
        f"<div>{paras(PROSE[2:] + more)}</div></body></html>"
    )
    parsed, raw = parse(page)
    for t in PROSE + more:
        assert t in parsed.text
    assert "Section number 7" not in parsed.text  # the real sidebar and the nav still go
    assert "thin_extraction" not in codes(parsed)
    assert_exact(parsed, raw)


def test_article_inside_a_sidebar_named_box_is_kept_by_the_prose_guard() -> None:
    # a class word that really is a boilerplate word, on the element that holds all the prose
    page = f'<body><nav><ul>{NAV}</ul></nav><div id="sidebar-main"><div>{paras(PROSE)}</div></div></body>'
    parsed, raw = parse(page)
    assert all(t in parsed.text for t in PROSE)
    assert "Section number 3" not in parsed.text
    assert_exact(parsed, raw)


def test_class_words_match_whole_parts_only() -> None:
    assert boiler_name("sidebar") and boiler_name("site-footer") and boiler_name("sidebar-left")
    assert boiler_name("cookie_banner") and boiler_name("x comments")
    assert not boiler_name("content-has-sidebar") and not boiler_name("with-sidebar")
    assert not boiler_name("elementor-widget-wrap") and not boiler_name("navigator-story")
    assert not boiler_name("shareholder-letter") and not boiler_name("")


# -- link-dense parents -----------------------------------------------------------------------


def test_link_heavy_parent_of_the_article_is_not_pruned() -> None:
    links = "".join(f'<a href="/tag/{k}">topic-{k}</a> ' for k in range(120))
    page = (
        f'<body><div class="wrap"><div class="tags">{links}</div><div class="story">{paras(PROSE)}</div>'
        f'<div class="more">{links}</div></div>'
        f"<div>{paras(PROSE[:1]).replace('valley', 'delta')}</div></body>"
    )
    parsed, raw = parse(page)
    assert all(t in parsed.text for t in PROSE), parsed.text[:300]
    assert "topic-17" not in parsed.text
    assert "thin_extraction" not in codes(parsed)
    assert_exact(parsed, raw)


def test_prose_split_between_link_heavy_boxes_is_never_lost_in_silence() -> None:
    links = "".join(f'<a href="/tag/{k}">topic-{k}</a> ' for k in range(150))
    half = len(PROSE) // 2
    page = (
        f"<body><div>{links}<div>{paras(PROSE[:half])}</div></div>"
        f"<div>{links}<div>{paras(PROSE[half:])}</div></div></body>"
    )
    for params in (DEFAULT_PARAMS, ContentParams(protect_share=1.01, name_prose=1.01)):
        parsed, raw = parse(page, params)
        assert all(t in parsed.text for t in PROSE), params
        assert parsed.blocks
        assert_exact(parsed, raw)


# -- thin extractions -------------------------------------------------------------------------


def _thin_page() -> str:
    box = '<div class="comments">{}</div>'
    return "<body>" + box.format(paras(PROSE[:2])) + box.format(paras(PROSE[2:])) + "</body>"


def test_thin_extraction_is_warned_and_falls_back_to_the_visible_text() -> None:
    strict = ContentParams(protect_share=1.01, name_prose=1.01)  # rules that prune every box
    parsed, raw = parse(_thin_page(), strict)
    warning = next(w for w in parsed.warnings if w.startswith("thin_extraction: "))
    assert "kept 0% of the visible text" in warning and "fell back" in warning
    assert all(t in parsed.text for t in PROSE)
    assert_exact(parsed, raw)
    # without the fallback the same rules would publish nothing: the guard is what saves it
    off, _ = parse(_thin_page(), replace(strict, thin_ratio=0.0))
    assert off.text == "" and not off.blocks
    assert any(w.startswith("empty_extraction: ") for w in off.warnings)


def test_a_page_with_no_visible_text_is_reported_not_silent() -> None:
    parsed, _ = parse("<html><head><title>x</title><script>var a = 1;</script></head><body> </body></html>")
    assert parsed.text == "" and not parsed.blocks
    assert parsed.warnings and parsed.warnings[0].startswith("empty_extraction: ")


def test_a_normal_article_is_not_flagged_thin() -> None:
    page = (
        f"<body><header><a href='/'>Site</a></header><nav><ul>{NAV}</ul></nav>"
        f"<article><h1>Walls</h1>{paras(PROSE)}</article><footer>Contact us at the office</footer></body>"
    )
    parsed, raw = parse(page)
    assert not [w for w in parsed.warnings if w.startswith(("thin_extraction", "empty_extraction"))]
    assert all(t in parsed.text for t in PROSE) and "Section number" not in parsed.text
    assert_exact(parsed, raw)


# -- boilerplate -----------------------------------------------------------------------------


def test_nav_footer_cookie_and_comment_boilerplate_dropped_prose_kept() -> None:
    page = (
        '<body><div class="cookie-consent">We use cookies to improve your experience. Accept all</div>'
        f'<header class="site-header"><a href="/">Home</a><ul>{NAV}</ul></header>'
        f"<main><h1>Stone walls</h1>{paras(PROSE)}"
        '<section id="comments"><h3>2 comments</h3><div class="comment">Nice read, thanks!</div>'
        '<div class="comment">First!</div></section>'
        '<div class="share-buttons"><a href="/s/fb">Share on Facebook</a><a href="/s/x">Share on X</a></div>'
        "</main><footer>Copyright 2026 Example Media. All rights reserved.</footer></body>"
    )
    parsed, raw = parse(page)
    for t in [*PROSE, "Stone walls"]:
        assert t in parsed.text
    for junk in ("cookies", "Section number", "Nice read", "First!", "Share on", "Copyright"):
        assert junk not in parsed.text, junk
    assert_exact(parsed, raw)


# -- whitespace-only blocks and exact offsets ------------------------------------------------


def test_nbsp_and_whitespace_only_blocks_keep_exact_offsets() -> None:
    page = (
        "<body><article><p>&nbsp;</p><p>" + PROSE[0] + "</p><p> &nbsp; \n </p><div>&#160;</div>"
        "<p>&nbsp;" + PROSE[1] + "&nbsp;</p><h2>&nbsp;</h2><p>\u00a0</p><p>" + PROSE[2] + "</p>"
        "<ul><li>&nbsp;</li><li>item one</li></ul><pre>&nbsp;</pre></article></body>"
    )
    parsed, raw = parse(page)
    assert PROSE[0] in parsed.text and PROSE[1] in parsed.text and "item one" in parsed.text
    assert_exact(parsed, raw)
    assert all(parsed.text[b.start : b.end].strip() for b in parsed.blocks)


def test_quote_inside_an_attribute_name_does_not_hide_text_from_the_offset_check() -> None:
    # HTML5: a quote opens a value only after "=": this <em>'s class value ends at 'class="',
    # the tag ends at 'd="e">', and "<commit>_ | --fixup" is text (a real git manual page).
    page = (
        '<body><main><pre>git commit [-a | --patch] <em class="(<code>-c</code> | <em>_<span class="'
        'hover" data-term="commit">&lt;commit&gt;</span>_</em> | --fixup [(amend|reword):">'
        "&lt;file&gt;</em>]\n    [--reset-author] [--allow-empty]</pre><p>" + PROSE[0] + "</p></main></body>"
    )
    parsed, raw = parse(page)
    assert "<commit>_ | --fixup" in parsed.text
    assert_exact(parsed, raw)


def test_paragraph_in_a_layout_table_joined_across_a_dropped_link_keeps_its_offsets() -> None:
    # a word joined across a dropped element ("a" + "--;") is in no cell: the strict rule holds
    page = (
        "<body><table><tr><td><p>"
        + PROSE[0]
        + ' It was the work of a<span class="ad">X</span>--; '
        + PROSE[1]
        + "</p><p>"
        + PROSE[2]
        + "</p></td></tr></table></body>"
    )
    parsed, raw = parse(page)
    assert "a--;" in parsed.text
    assert_exact(parsed, raw)


_WORD = st.sampled_from(
    ["stone", "wall", "&amp;", "&nbsp;", "&#160;", "caf\u00e9", "&lt;x&gt;", "\u00a0", "r\u00fcck"]
)
_SPACE = st.sampled_from([" ", "  ", "\n", "\t", "&nbsp;", " &nbsp; ", "<br>", ""])
_INLINE = st.sampled_from(["{}", "<b>{}</b>", "<a href='/x'>{}</a>", "<span>{}</span>"])


@st.composite
def _block(draw: st.DrawFn) -> str:
    n = draw(st.integers(0, 12))
    parts = [draw(_INLINE).format(draw(_WORD)) + draw(_SPACE) for _ in range(n)]
    tag = draw(st.sampled_from(["p", "div", "li", "h2", "blockquote", "td"]))
    body = "".join(parts)
    if tag == "li":
        return f"<ul><li>{body}</li></ul>"
    if tag == "td":
        return f"<table><tr><td>{body}</td><td>x</td></tr></table>"
    return f"<{tag}>{body}</{tag}>"


@settings(max_examples=60, deadline=None)
@given(st.lists(_block(), min_size=1, max_size=12))
def test_every_block_of_generated_pages_maps_back_exactly(blocks: list[str]) -> None:
    page = "<html><body><main>" + "".join(blocks) + f"<p>{PROSE[0]}</p></main></body></html>"
    parsed, raw = parse(page)
    assert PROSE[0] in parsed.text
    assert_exact(parsed, raw)


# -- short blocks at the edges of the content ------------------------------------------------


def test_a_run_of_short_widget_blocks_before_the_prose_is_dropped() -> None:
    menu = "".join(f"<div>Option {k}</div>" for k in range(12))  # a video player's settings menu
    page = f"<body><main>{menu}<h1>The valley</h1>{paras(PROSE)}<p>Tags: a, b</p></main></body>"
    parsed, raw = parse(page)
    assert "Option" not in parsed.text
    assert parsed.text.startswith("The valley") and PROSE[-1] in parsed.text and "Tags" in parsed.text
    assert_exact(parsed, raw)
    off, _ = parse(page, replace(DEFAULT_PARAMS, edge_run=0))
    assert "Option 3" in off.text


def test_a_few_short_blocks_before_the_prose_are_kept() -> None:
    page = f"<body><main><p>By Ann Lee</p><p>3 May 2024</p>{paras(PROSE)}</main></body>"
    parsed, _ = parse(page)
    assert parsed.text.startswith("By Ann Lee")


# -- readability-style scored container (html_score) --------------------------------------------


def test_a_short_item_grid_between_the_parts_of_an_article_is_dropped() -> None:
    grid = "".join(f"<div>Size {k} in stock</div>" for k in range(4))
    lead = PROSE + [t.replace("walls", "fences") for t in PROSE[:2]]
    more = [t.replace("walls", "hedges") for t in PROSE[1:]]
    page = (
        f"<html><body><div><div>{paras(lead)}</div>"
        f"<div>{grid}</div><div>{paras(more)}</div></div></body></html>"
    )
    parsed, raw = parse(page)
    assert "Size 2 in stock" not in parsed.text  # the grid goes
    assert all(t in parsed.text for t in lead + more)  # both parts of the article stay
    assert_exact(parsed, raw)
    off, _ = parse(page, replace(DEFAULT_PARAMS, scored="off"))
    assert "Size 2 in stock" in off.text


def test_an_article_continued_in_a_sibling_is_kept_whole() -> None:
    more = [t.replace("walls", "hedges") for t in PROSE[:3]]
    page = (
        f"<html><body><nav><ul>{NAV}</ul></nav><div><article>{paras(PROSE)}</article>"
        f"<div>{paras(more)}</div></div><footer><ul>{NAV}</ul></footer></body></html>"
    )
    parsed, raw = parse(page)
    assert all(t in parsed.text for t in PROSE + more)  # the continuation joins the article
    assert "Section number 7" not in parsed.text  # the menus around it still go
    assert_exact(parsed, raw)
    off, _ = parse(page, replace(DEFAULT_PARAMS, scored="off"))
    assert more[0] not in off.text


def test_the_scored_container_never_drops_most_of_the_prose() -> None:
    # one long paragraph-dense block scores best, yet the page's prose is spread over many
    # siblings with one paragraph each: the density container is kept
    blocks = "".join(f"<section><p>{t}</p></section>" for t in PROSE * 2)
    dense = f"<div><p>{PROSE[0]}</p><p>{PROSE[1]}</p></div>"
    page = f"<html><body><div>{dense}{blocks}</div></body></html>"
    parsed, raw = parse(page)
    assert parsed.text.count(PROSE[3]) == 2
    assert_exact(parsed, raw)
