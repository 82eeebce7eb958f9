"""Main-content rules of issue 15 (``tessera-html/8``), each attacked from both sides: the page
where the rule must remove boilerplate, and a page of the same shape where it must keep the
real content.

Rules: MathML is text (its annotations are not); a photo gallery's captions; a widget named by
its id (``id="comment-box"``), not a heading's anchor; teaser cards with their paragraphs inside
links (``<a href><p>…</p></a>``) after an article, not a page of cards; the short label of an
element with a control role (``role="button"``), not an FAQ question. Fixtures are small pages
written here.
"""

from __future__ import annotations

from tests.parsing.test_html_content_rules import ARTICLE, OTHER, page, paras, parse, parse_raw

# --- MathML -----------------------------------------------------------------------------------


def test_mathml_is_text_and_its_annotation_is_not() -> None:
    math = (
        "<math><semantics><mrow><mi>x</mi> <mo>=</mo> <mn>2</mn></mrow>"
        "<annotation encoding='application/x-tex'>x = 2 \\quad TEXSOURCE</annotation>"
        "</semantics></math>"
    )
    body = "<article>" + paras(ARTICLE[:2]) + f"<p>So the answer is {math} in the end.</p></article>"
    text = parse(page(body))
    assert "So the answer is x = 2 in the end." in text
    assert "TEXSOURCE" not in text


def test_svg_stays_raw_text() -> None:
    body = "<article>" + paras(ARTICLE[:2]) + "<p>Icon <svg><text>SVGLABEL</text></svg> here.</p></article>"
    assert "SVGLABEL" not in parse(page(body))


# --- a photo gallery ----------------------------------------------------------------------------


def _gallery(n: int) -> str:
    return "".join(
        f"<li><h2>{k}/{n}</h2><p>{OTHER[k % len(OTHER)]}</p><p class='credits'>Agency</p></li>"
        for k in range(1, n + 1)
    )


def test_a_gallery_of_captions_longer_than_the_article_is_dropped() -> None:
    body = (
        "<article>"
        + paras(ARTICLE * 2)
        + "<div class='media-gallery'><ul>"
        + _gallery(12)
        + "</ul></div></article>"
    )
    text = parse(page(body))
    assert ARTICLE[0] in text and OTHER[0] not in text


def test_a_gallery_page_keeps_its_captions() -> None:
    # the gallery is the page: its captions hold all the prose there is
    body = (
        "<main><h1>Photos of the valley</h1><div class='media-gallery'><ul>"
        + _gallery(12)
        + "</ul></div></main>"
    )
    text = parse(page(body))
    assert OTHER[0] in text and OTHER[3] in text


# --- a widget named by its id -------------------------------------------------------------------


def test_comments_named_by_id_under_a_post_class_are_dropped() -> None:
    body = (
        "<div class='post'>"
        + paras(ARTICLE)
        + "</div><div id='comment-box' class='user-post-box'>"
        + paras(OTHER)
        + "</div>"
    )
    text = parse(page("<div class='wrap'>" + body + "</div>"))
    assert ARTICLE[0] in text and ARTICLE[3] in text
    assert OTHER[0] not in text and OTHER[3] not in text


def test_a_section_anchored_by_its_heading_is_kept() -> None:
    # documentation sections carry their heading's slug as id: "respond-to-review-comments"
    body = (
        "<main>"
        + paras(ARTICLE)
        + "<section id='respond-to-review-comments'><h2>Respond to review comments</h2>"
        + paras(OTHER[:2])
        + "</section></main>"
    )
    assert OTHER[1] in parse(page(body))


def test_a_widget_id_beside_an_article_class_is_kept() -> None:
    body = (
        "<div class='wrap'>"
        + paras(ARTICLE[:2])
        + "<div id='share-box' class='entry-content'>"
        + paras(ARTICLE[2:])
        + "</div></div>"
    )
    assert ARTICLE[3] in parse(page(body))


# --- teaser cards with paragraphs inside links --------------------------------------------------


def _cards(n: int) -> str:
    return "".join(
        f"<div class='card'><a href='https://news.example/story-{k}'><p><b>Story number {k}: "
        f"a teaser that reads like a sentence of prose, long enough</b></p></a></div>"
        for k in range(n)
    )


def test_cards_with_paragraphs_inside_links_after_an_article_are_dropped() -> None:
    body = "<main>" + paras(ARTICLE * 2) + "<div class='block'>" + _cards(6) + "</div></main>"
    text = parse(page(body))
    assert ARTICLE[0] in text and ARTICLE[3] in text
    assert "Story number 2:" not in text


def test_cards_ahead_of_the_text_are_the_content() -> None:
    # a product grid above its FAQ: the cards come before any prose of the page
    body = "<main><div class='block'>" + _cards(6) + "</div>" + paras(ARTICLE * 2) + "</main>"
    text = parse(page(body))
    assert "Story number 2:" in text and ARTICLE[0] in text


def test_a_page_of_cards_keeps_them() -> None:
    # more prose inside the links than outside: the cards are what the page is
    body = "<main>" + paras(ARTICLE[:1]) + "<div class='block'>" + _cards(20) + "</div></main>"
    assert "Story number 12:" in parse(page(body))


def test_dropping_cards_keeps_exact_offsets() -> None:
    body = "<main>" + paras(ARTICLE * 2) + "<div class='block'>" + _cards(6) + "</div></main>"
    parsed = parse_raw(page(body).encode())  # parse_raw checks every block's byte range
    assert parsed.blocks


# --- control labels -----------------------------------------------------------------------------


def test_short_control_labels_are_dropped() -> None:
    player = (
        "<div class='player'><div role='button'><span>Play Video</span></div>"
        "<div role='button'>Mute</div><div role='slider'>Volume</div></div>"
    )
    body = "<article>" + paras(ARTICLE[:2]) + player + paras(ARTICLE[2:]) + "</article>"
    text = parse(page(body))
    assert ARTICLE[3] in text
    assert "Play Video" not in text and "Mute" not in text


def test_a_question_that_opens_its_answer_is_kept() -> None:
    faq = (
        "<div role='button' aria-expanded='true'>How long do the stone walls last?</div>"
        f"<div>{OTHER[2]}</div>"
    )
    body = "<article>" + paras(ARTICLE) + faq + "</article>"
    assert "How long do the stone walls last?" in parse(page(body))
