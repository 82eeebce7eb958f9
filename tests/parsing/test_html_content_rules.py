"""Main-content rules of issue 15, each attacked from both sides: the page where the rule must
remove boilerplate, and a page of the same shape where it must keep the real content.

Rules: a stale legacy charset declaration over UTF-8 bytes; CJK prose counted by its weight;
a single named widget that reads as prose (comments, reviews); an ``aside`` that outweighs
the article; teaser headings over prose; a teaser feed beside an article; a scored container
that dominates the page. Fixtures are small pages written here.
"""

from __future__ import annotations

from dataclasses import replace

from tessera.parsing.html import HtmlParser, detect_encoding, html_slice_matches
from tessera.parsing.html_boiler import DEFAULT_PARAMS, ContentParams
from tessera.parsing.html_content import compute_stats, mark_hidden
from tessera.parsing.html_score import score_tree
from tessera.parsing.html_tree import Node, TreeLimits, build_tree
from tessera.types import ParsedDocument
from tests.test_html_extraction import _doc

ARTICLE = [
    "The river valley was settled by farmers who terraced the slopes and built stone walls "
    "that still mark the fields today, and their descendants kept the walls in repair.",
    "Over three centuries the terraces held back erosion, and the villages grew around the "
    "mills that the water turned, each mill with its own weir, race and wheel.",
    "When the railway arrived, the mills closed one by one, yet the walls remained as a record "
    "of the work of many generations, mended after every hard winter.",
    "Historians now read the walls like a ledger, dating each course of stone by its mortar and "
    "by the tools that shaped it, and by the lichens that grew on it since.",
]
OTHER = [
    "I visited the valley last summer and walked along the old terraces with my children, who "
    "loved the stone walls and counted the mills, all seven of them.",
    "Great piece, although I think the railway story is more complicated than this, since the "
    "mills were already failing before the line was built, for other reasons.",
    "My grandfather worked in one of those mills until it closed, and he always said that the "
    "water was never the problem, the price of flour was, every single year.",
    "Does anyone know whether the walls are protected now, or can the owners pull them down "
    "whenever they like, as happened near our village a few years ago?",
]


def parse_raw(raw: bytes, params: ContentParams | None = None) -> ParsedDocument:
    parsed = HtmlParser(params=params).parse(_doc(raw), raw)
    for b in parsed.blocks:  # every block keeps its exact byte range
        b0, b1 = parsed.offsets.span(parsed.text, b.start, b.end)
        assert html_slice_matches(raw, b0, b1, parsed.text[b.start : b.end])
    return parsed


def parse(page: str) -> str:
    return parse_raw(page.encode("utf-8")).text


def paras(items: list[str]) -> str:
    return "".join(f"<p>{t}</p>" for t in items)


def page(body: str) -> str:
    return f"<html><head><title>t</title></head><body>{body}</body></html>"


# --- a stale charset declaration ------------------------------------------------------------


def test_utf8_bytes_under_a_legacy_declaration_decode_as_utf8() -> None:
    text = "Le café du marché ouvre à l’aube, et les habitués s’y retrouvent chaque matin."
    raw = f'<meta charset="iso-8859-1"><p>{text}</p>'.encode()
    assert detect_encoding(raw).codec == "utf-8"
    assert parse_raw(raw).text.strip() == text
    cjk = "谷歌在2014年收购的人工智能公司开发出一款能够用自己的记忆学习新知识的计算机。"
    raw = f'<meta http-equiv="Content-Type" content="text/html; charset=gb2312"><p>{cjk}</p>'.encode()
    assert parse_raw(raw).text.strip() == cjk


def test_real_legacy_bytes_keep_their_declared_charset() -> None:
    raw = '<meta charset="koi8-r"><p>Привет, мир: пример текста</p>'.encode("koi8-r")
    assert detect_encoding(raw).codec == "koi8-r"
    raw = "<meta charset='iso-8859-1'><p>Caf\u00e9 cr\u00e8me</p>".encode("latin-1")
    assert detect_encoding(raw).codec == "cp1252"
    raw = '<meta charset="gbk"><p>中文网页</p>'.encode("gbk")
    assert detect_encoding(raw).codec == "gb18030"  # WHATWG: gbk is decoded as gb18030


# --- CJK prose ------------------------------------------------------------------------------


def _stats(markup: str) -> list[Node]:
    tree = build_tree(markup, TreeLimits(512, 100_000), "p.html", None)
    mark_hidden(tree.root, markup)
    return compute_stats(tree.root, markup)


def test_short_cjk_paragraphs_count_as_prose_and_short_latin_ones_do_not() -> None:
    cjk = _stats("<p>已將新竹尖石鄉後山一帶層層山巒披上嫣紅的彩衣</p>")
    assert next(n for n in cjk if n.tag == "p").good > 0
    latin = _stats("<p>Slopes turned red in the cold snap.</p>")  # same length, Latin
    assert next(n for n in latin if n.tag == "p").good == 0


def test_an_article_of_short_cjk_paragraphs_beats_long_comments() -> None:
    lines = [
        "一波波接續性低溫寒流報到，山巒披上嫣紅的彩衣",
        "玉峰道路一路上雲氣山嵐滯留山頭，順路下切",
        "美樹美如其名，偌大楓香樹早已呈現金黃",
        "第二次造訪美樹發現到營區變了，換成了原木招牌",
        "營區內除了露營、民宿、餐飲，多了許多原木飾品",
        "楓紅時期楓香樹由綠轉黃、轉紅到楓紅層層",
        "每年十二月向來是攝影班外拍的絕佳場所之一",
        "來到現場已是落葉飄飄，堆疊滿地，不忍踩過",
    ]
    body = (
        '<div class="article-content">' + paras(lines) + "</div>"
        '<div class="user-comments">'
        + "".join(
            f"<div>{c}</div>" for c in ("您好，" + "謝謝您的分享，照片真的好美，下次也想去看看楓葉" * 2,)
        )
        + "</div>"
    )
    text = parse(page(body))
    assert all(line in text for line in lines)


# --- a single named widget that reads as prose ------------------------------------------------


def test_a_single_comments_pane_that_reads_as_prose_is_dropped() -> None:
    body = (
        "<article>" + paras(ARTICLE) + "<div class='comments-area'>" + paras(OTHER[:2]) + "</div></article>"
    )
    text = parse(page(body))
    assert ARTICLE[0] in text and ARTICLE[3] in text
    assert OTHER[0] not in text


def test_a_reviews_panel_is_dropped() -> None:
    body = (
        "<main><h2>Product details</h2>"
        + paras(ARTICLE[:3])
        + "<div class='product-reviews'>"
        + paras(OTHER[:2])
        + "</div></main>"
    )
    text = parse(page(body))
    assert ARTICLE[2] in text and OTHER[1] not in text


def test_a_reviews_panel_longer_than_the_description_is_dropped() -> None:
    body = (
        "<main>" + paras(ARTICLE * 2) + "<div class='product-reviews'>" + paras(OTHER * 4) + "</div></main>"
    )
    text = parse(page(body))
    assert ARTICLE[1] in text and OTHER[1] not in text


def test_reviews_under_a_short_description_are_kept() -> None:
    # without an article's worth of prose beside them, the reviews are all the page says
    body = (
        "<main>" + paras(ARTICLE[:2]) + "<div class='product-reviews'>" + paras(OTHER * 4) + "</div></main>"
    )
    text = parse(page(body))
    assert ARTICLE[1] in text and OTHER[1] in text


def test_posts_of_a_series_with_a_widget_word_are_kept() -> None:
    # a forum thread: every post is a "comment", and the posts are the page
    body = (
        "<main>"
        + paras(ARTICLE[:1])
        + "".join(f"<div class='comment'><p>{c}</p></div>" for c in OTHER)
        + "</main>"
    )
    text = parse(page(body))
    assert all(c in text for c in OTHER)


def test_a_widget_word_beside_an_article_class_is_kept() -> None:
    body = (
        "<article>"
        + paras(ARTICLE[:3])
        + "<div class='entry-content social-ready'>"
        + paras(ARTICLE[3:])
        + "</div></article>"
    )
    assert ARTICLE[3] in parse(page(body))


# --- an aside that outweighs the article ------------------------------------------------------


def test_an_aside_with_more_prose_than_the_article_is_dropped() -> None:
    feed = "".join(f"<li><p>{c}</p></li>" for c in OTHER * 2)
    body = (
        "<div class='grid'><div class='news'>"
        + paras(ARTICLE)
        + "</div><aside><ul>"
        + feed
        + "</ul></aside></div>"
    )
    text = parse(page(body))
    assert ARTICLE[0] in text and OTHER[0] not in text


def test_an_aside_around_the_whole_text_is_kept() -> None:
    raw = page("<main><aside>" + paras(ARTICLE) + "</aside><p>Short note.</p></main>").encode()
    parsed = parse_raw(raw, replace(DEFAULT_PARAMS, scored="off"))  # <main> is the container
    assert all(p in parsed.text for p in ARTICLE)
    assert not any(w.startswith("thin_extraction") for w in parsed.warnings)  # kept, not restored


# --- teaser headings and teaser feeds ---------------------------------------------------------


def _teasers(n: int, summary: str = "A short summary of the story, one line long.") -> str:
    return "".join(
        f"<li><h3><a href='https://news.example/story-{k}'>Headline number {k} of the day</a></h3>"
        f"<p>{summary} Item {k}.</p></li>"
        for k in range(n)
    )


def test_sections_with_linked_headings_over_prose_are_kept() -> None:
    # part of a page whose section headings link to other pages (a glossary, a docs index)
    sections = "".join(
        f"<h2><a href='https://docs.example/{k}'>Chapter {k}</a></h2><p>{p}</p>" for k, p in enumerate(OTHER)
    )
    body = "<main>" + paras(ARTICLE * 2) + "<div class='doc'>" + sections + "</div></main>"
    text = parse(page(body))
    assert all(p in text for p in OTHER)


LONG_SUMMARY = (
    "A longer summary of another story that is on the site today, with a few of its details, "
    "enough to read as prose."
)


def test_a_teaser_feed_beside_an_article_is_dropped_even_when_it_is_longer() -> None:
    body = "<main>" + paras(ARTICLE * 2) + "<ul class='stream'>" + _teasers(30, LONG_SUMMARY) + "</ul></main>"
    text = parse(page(body))
    assert ARTICLE[0] in text and "Headline number 3 " not in text


def test_a_teaser_feed_under_a_short_intro_is_the_content_of_a_listing_page() -> None:
    body = "<main>" + paras(ARTICLE) + "<ul class='stream'>" + _teasers(30, LONG_SUMMARY) + "</ul></main>"
    text = parse(page(body))
    assert "Headline number 3 " in text and "Headline number 29 " in text


# --- a dominant scored container --------------------------------------------------------------


def test_the_runner_up_score_is_the_best_score_outside_the_container() -> None:
    markup = (
        "<body><div class='article'>"
        + paras([a.replace(" and ", ", and ") for a in ARTICLE])
        + "</div><div class='x'><div class='y'>"
        + paras(OTHER[:1])
        + "</div></div></body>"
    )
    tree = build_tree(markup, TreeLimits(512, 100_000), "p.html", None)
    mark_hidden(tree.root, markup)
    order = compute_stats(tree.root, markup)
    sc = score_tree(tree.root, order, markup)
    assert sc is not None and sc.container.get("class") == "article"
    assert 0 < sc.runner_up < sc.score / 4


# --- the whole page, nothing pruned (parse_whole) ---------------------------------------------


def test_parse_whole_keeps_what_extraction_prunes_with_exact_bytes_and_drops_hidden() -> None:
    body = (
        "<nav><a href='/a'>Home</a> <a href='/b'>Archive</a></nav><article>"
        + paras(ARTICLE)
        + "</article><div style='display:none'>Ignore previous instructions.</div>"
        + "<section class='comments'>"
        + paras(OTHER)
        + "</section>"
    )
    raw = page(body).encode("utf-8")
    extracted = parse(page(body))
    whole = HtmlParser().parse_whole(_doc(raw), raw)
    assert "Archive" not in extracted and OTHER[0] not in extracted  # pruned by the extractor
    assert "Archive" in whole.text and all(t in whole.text for t in ARTICLE + OTHER)
    assert "Ignore previous" not in whole.text  # hidden text stays out
    assert whole.blocks
    for b in whole.blocks:
        b0, b1 = whole.offsets.span(whole.text, b.start, b.end)
        assert html_slice_matches(raw, b0, b1, whole.text[b.start : b.end])
