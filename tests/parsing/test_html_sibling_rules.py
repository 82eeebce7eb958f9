"""Main-content rules of issue 15 (``tessera-html/10``), each attacked from both sides: the page
where the rule must remove what is not the page's text, and a page of the same shape where it
must keep the real content.

Rules: a dialog hidden until a script opens it (``class="modal"``), even a series of them; a
widget word run together with a container noun in one class part (``jp-relatedposts``,
``commentlist``), not a longer word (``commentary``); a call-to-action block (``cta``) beside
an article, not a series of them; a sibling of the scored container that is a paragraph of
inline content in a ``<div>`` (an article's lead) joins it, as a ``<p>`` does, unless it is
link-dense; a short line above the article's first paragraph that reads as prose but holds a
dateline's mark (a ``<time>``, a date or author ``itemprop``), as a dateline; a block whose own
short heading names a widget ("Related", "Comments"), not a longer heading ("Related work on
...") nor a thread that is the page. Fixtures are small pages written here.
"""

from __future__ import annotations

from tessera.parsing.html_boiler import boiler_name
from tests.parsing.test_html_content_rules import ARTICLE, OTHER, page, paras, parse

# --- a hidden dialog ----------------------------------------------------------------------------


def _modal(body: str) -> str:
    return (
        "<div class='col-12 modal fade' tabindex='-1'><div class='modal-dialog'>"
        f"<div class='modal-content'><h4 class='modal-title'>Become an author</h4>"
        f"<div class='modal-body'>{body}</div></div></div></div>"
    )


def test_dialogs_hidden_until_opened_are_dropped_even_a_series() -> None:
    dialogs = "".join(_modal(paras([t])) for t in OTHER[:3])
    body = "<main>" + paras(ARTICLE * 2) + dialogs + "</main>"
    text = parse(page(body))
    assert ARTICLE[0] in text and ARTICLE[3] in text
    assert OTHER[0] not in text and OTHER[2] not in text and "Become an author" not in text


def test_a_modal_word_inside_a_longer_class_is_kept() -> None:
    # a section about modal verbs: "modal" is a part of the class, not the class token itself
    body = (
        "<main>"
        + paras(ARTICLE)
        + "<section class='modal-verbs'><h2>Can and may</h2>"
        + paras(OTHER[:2])
        + "</section></main>"
    )
    assert OTHER[1] in parse(page(body))


def test_a_reading_view_rendered_in_a_modal_is_kept() -> None:
    # the whole article sits in the dialog: the share guard keeps it
    body = "<div class='wrap'>" + _modal(paras(ARTICLE * 2)) + "<p>Footer line.</p></div>"
    assert ARTICLE[3] in parse(page(body))


# --- widget words run together with a noun ------------------------------------------------------


def test_compound_widget_class_parts() -> None:
    words = frozenset(("related", "comment", "comments", "share"))
    assert boiler_name("jp-relatedposts", words)
    assert boiler_name("commentlist", words)
    assert boiler_name("sharebox", words)
    assert not boiler_name("commentary", words)
    assert not boiler_name("shareholders", words)
    assert not boiler_name("related-work-note", frozenset(("work",)))  # a middle part counts not


def test_related_posts_named_in_one_word_are_dropped() -> None:
    related = (
        "<div id='jp-relatedposts' class='jp-relatedposts'><h3>Related</h3>"
        "<div class='jp-relatedposts-items'>" + paras(OTHER[:3]) + "</div></div>"
    )
    body = "<div class='wrap'><main>" + paras(ARTICLE * 2) + related + "</main></div>"
    text = parse(page(body))
    assert ARTICLE[0] in text and ARTICLE[3] in text
    assert OTHER[0] not in text and OTHER[2] not in text


def test_a_commentary_section_is_kept() -> None:
    # "commentary" is a word of its own, not "comment" run together with a container noun
    body = (
        "<main>"
        + paras(ARTICLE[:2])
        + "<div class='commentary'><h2>Our view</h2>"
        + paras(OTHER[:2])
        + "</div>"
        + paras(ARTICLE[2:])
        + "</main>"
    )
    text = parse(page(body))
    assert OTHER[0] in text and OTHER[1] in text


# --- a call to action -------------------------------------------------------------------------


def test_a_call_to_action_after_the_article_is_dropped() -> None:
    cta = (
        "<div class='cta-global'><h4>See what launched at the fair</h4>"
        f"<p>{OTHER[0]}</p><a href='/launches'>Learn more</a></div>"
    )
    body = "<main>" + paras(ARTICLE * 2) + cta + "</main>"
    text = parse(page(body))
    assert ARTICLE[3] in text
    assert OTHER[0] not in text


def test_a_series_of_call_to_action_cards_is_kept() -> None:
    # a services page: one card per offer, each a short text of its own
    cards = "".join(f"<div class='cta-card'><h3>Offer {k}</h3><p>{t}</p></div>" for k, t in enumerate(OTHER))
    body = "<main><h1>Our services</h1>" + paras(ARTICLE[:1]) + cards + "</main>"
    text = parse(page(body))
    assert OTHER[0] in text and OTHER[3] in text


# --- a paragraph in a div beside the scored container ---------------------------------------------

LEAD = (
    "A short history of the valley, told through its walls, its mills and the people who "
    "mended them, from the first terraces to the last working wheel."
)


def _story(lead: str) -> str:
    text = paras([t.replace(" and ", ", and ") for t in ARTICLE * 2])
    return (
        "<div class='page'><div class='story'>"
        "<div class='byline'><a href='/authors/ann'>Ann Writer</a></div>"
        f"<div class='story-lead'>{lead}</div>"
        "<div class='share-tools'><a href='/s/1'>Share</a> <a href='/s/2'>Mail</a></div>"
        f"<div class='story-text'>{text}</div>"
        "</div>"
        "<div class='rail'>"
        + "".join(f"<div class='teaser'><a href='/t{k}'>Teaser {k}</a></div>" for k in range(5))
        + "</div></div>"
    )


def test_a_lead_paragraph_in_a_div_beside_the_text_is_kept() -> None:
    text = parse(page(_story(LEAD)))
    assert "The river valley was settled" in text
    assert LEAD in text


def test_a_link_dense_div_beside_the_text_stays_out() -> None:
    links = " ".join(
        f"<a href='/more/{k}'>More stories about walls and mills number {k}</a>" for k in range(3)
    )
    text = parse(page(_story(f"Read next: {links}")))
    assert "The river valley was settled" in text
    assert "More stories about walls" not in text


# --- a dateline that reads as prose ---------------------------------------------------------------

DATELINE = (
    "<span itemprop='author'>Agency staff</span> "
    "<time datetime='2015-04-30T07:19'>30 April 2015 at 07:19</time> "
    "<span class='maj'>(updated <time datetime='2015-04-30T07:38'>07:38</time>)</span>"
)


def _dated(line: str) -> str:
    return page(
        "<article><header><h1>Stone walls outlive the mills</h1>"
        f"<div class='info'>{line}</div></header>" + paras(ARTICLE * 2) + "</article>"
    )


def test_a_dateline_that_reads_as_prose_is_dropped() -> None:
    text = parse(_dated(DATELINE))
    assert "07:19" not in text and "Agency staff" not in text
    assert "Stone walls outlive the mills" in text and ARTICLE[0] in text


def test_a_first_paragraph_that_mentions_a_date_is_kept() -> None:
    # longer than a dateline: the article's first paragraph, with a <time> in its text
    line = ARTICLE[0] + " It began on <time datetime='1790'>a spring day in 1790</time>."
    assert "It began on a spring day in 1790." in parse(_dated(line))
    # a short sentence that mentions a date stays: the date is a small part of its text
    line = "On <time datetime='1890-05-01'>1 May 1890</time> the last mill closed its gates for good."
    assert "the last mill closed its gates" in parse(_dated(line))


# --- a block whose heading names a widget ---------------------------------------------------------


def test_a_block_headed_related_is_dropped_whatever_its_class() -> None:
    related = (
        "<div class='w-100 list-container'><div class='inner'><h3>Related &mdash; more</h3>"
        "<h2>Read further in the valley</h2>" + paras(OTHER[:3]) + "</div></div>"
    )
    body = "<main>" + paras(ARTICLE * 2) + related + "</main>"
    text = parse(page(body))
    assert ARTICLE[0] in text and ARTICLE[3] in text
    assert OTHER[0] not in text and "Read further" not in text


def test_a_section_on_related_work_is_kept() -> None:
    # a longer heading that starts with the word is the article's own section
    section = "<section><h2>Related work on terraces in other valleys</h2>" + paras(OTHER[:2]) + "</section>"
    text = parse(page("<main>" + paras(ARTICLE * 2) + section + "</main>"))
    assert OTHER[0] in text and "Related work on terraces" in text


def test_comments_that_are_the_page_are_kept() -> None:
    # a thread page: the block under "Comments" holds most of the prose
    thread = "<div class='thread'><h2>Comments</h2>" + paras(OTHER * 3) + "</div>"
    text = parse(page("<main>" + paras(ARTICLE[:1]) + thread + "</main>"))
    assert OTHER[0] in text and OTHER[3] in text
