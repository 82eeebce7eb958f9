"""Rules for the top of an article (``tessera-html/9``, :mod:`tessera.parsing.html_lead`), each
attacked from both sides: the page where the rule must remove what is not the article's text,
and a page of the same shape where it must keep the real content.

Rules: a dateline or byline above the first paragraph (a ``<time>``, a date or author
``itemprop``, a date or byline class); a breadcrumb trail that reads as prose; a heading above
the first paragraph that repeats the page's title (``<title>`` or ``og:title``; only with
``ContentParams.title_repeat``, off by default). Fixtures are small pages written here.
"""

from __future__ import annotations

from dataclasses import replace

from tessera.parsing.html_boiler import DEFAULT_PARAMS
from tessera.parsing.html_lead import page_titles, repeats_title
from tests.parsing.test_html_content_rules import ARTICLE, OTHER, paras, parse_raw

BODY = ARTICLE * 2  # an article's worth of prose (the lead rules need ``lead_prose`` chars)
HEADLINE = "Stone Walls That Outlived the Mills"


def doc(body: str, title: str = f"{HEADLINE} | Valley Gazette", head: str = "") -> str:
    return f"<html><head><title>{title}</title>{head}</head><body>{body}</body></html>"


TITLES = replace(DEFAULT_PARAMS, title_repeat=True)


def text_of(html_text: str, lead: bool = True) -> str:
    """The default rules (datelines, breadcrumbs); ``lead=False``: without the lead rules."""
    params = None if lead else replace(DEFAULT_PARAMS, lead=False)
    return parse_raw(html_text.encode("utf-8"), params).text


def titled(html_text: str) -> str:
    """With ``title_repeat`` on (off by default: the title heading roots the chunks' breadcrumbs)."""
    return parse_raw(html_text.encode("utf-8"), TITLES).text


# --- a heading that repeats the page title ----------------------------------------------------


def test_a_headline_repeating_the_title_is_dropped() -> None:
    page = doc(f"<article><h1>{HEADLINE}</h1>{paras(BODY)}</article>")
    text = titled(page)
    assert HEADLINE not in text
    assert text.startswith(ARTICLE[0])
    assert HEADLINE in text_of(page)  # off by default: the heading roots the chunks' breadcrumbs


def test_the_title_from_og_title_and_entities_and_case_still_match() -> None:
    head = f'<meta property="og:title" content="{HEADLINE.upper()}">'
    page = doc(
        "<article><h2>Stone walls that outlived the mills</h2>" + paras(BODY) + "</article>",
        title="Valley Gazette",
        head=head,
    )
    assert "outlived" not in titled(page)
    page = doc(
        "<article><h1>Fish &amp; Chips on the Old Quay</h1>" + paras(BODY) + "</article>",
        "Fish & Chips on the Old Quay",
    )
    assert "Chips" not in titled(page)


def test_a_cjk_headline_repeating_the_title_is_dropped() -> None:
    head = "新电脑已可利用记忆自学 人工智能迈上新台阶"
    assert repeats_title(head, (head + "_科技_新闻网",))
    assert not repeats_title("人工智能", ("新电脑已可利用记忆自学 人工智能迈上新台阶",))  # too short


def test_a_heading_other_than_the_title_stays() -> None:
    sub = "How three centuries of farmers kept the terraces standing"
    page = doc(f"<article><h1>{HEADLINE}</h1><h2>{sub}</h2>{paras(BODY)}</article>")
    text = titled(page)
    assert sub in text and HEADLINE not in text


def test_a_heading_repeating_the_title_below_the_first_paragraph_stays() -> None:
    page = doc(f"<article>{paras(BODY[:2])}<h2>{HEADLINE}</h2>{paras(BODY[2:])}</article>")
    assert HEADLINE in titled(page)


def test_a_short_heading_that_is_one_word_of_the_title_stays() -> None:
    page = doc(f"<article><h2>Walls</h2>{paras(BODY)}</article>")
    assert "Walls\n" in titled(page)


def test_a_product_name_above_little_prose_stays() -> None:
    # a product page: its name is the title too, but there is no article's worth of prose
    name = "Alpine Trail Jacket in Slate Grey"
    page = doc(f"<main><h1>{name}</h1><p>{ARTICLE[0]}</p><p>Price: 120 EUR</p></main>", f"{name} | Shop")
    assert name in titled(page)


def test_page_titles_reads_title_and_og_title_only_from_the_head() -> None:
    src = doc("<p>x</p>", title="A &amp; B", head="<meta name='twitter:title' content='C D'>")
    assert page_titles(src, src.index("<body>")) == ("A & B", "C D")
    assert page_titles("<body><p>no head</p></body>", 10) == ()


# --- datelines and bylines --------------------------------------------------------------------


def test_datelines_and_bylines_above_the_first_paragraph_are_dropped() -> None:
    lead = (
        "<div class='info'><span class='author' itemprop='author'>By Ann Reed</span> "
        "<time datetime='2021-03-03'>3 March 2021, 07:19</time></div>"
        "<p class='article-dateline'>Updated 4 March 2021 at 6:01</p>"
        "<div itemprop='datePublished'>Thu 4 Mar 2021</div>"
    )
    page = doc(f"<article>{lead}{paras(BODY)}</article>", title="Other")
    text = text_of(page)
    for gone in ("Ann Reed", "07:19", "6:01", "Thu 4 Mar"):
        assert gone not in text
    assert text.startswith(ARTICLE[0])
    assert "07:19" in text_of(page, lead=False)


def test_a_time_inside_a_paragraph_or_below_it_stays() -> None:
    inline = (
        "<p>On <time datetime='1890-05-01'>1 May 1890</time> the last mill closed its gates for good.</p>"
    )
    timeline = "<ul><li><time>1890</time> The last mill closes</li><li><time>1901</time> Railway</li></ul>"
    page = doc(f"<article>{inline}{paras(BODY)}{timeline}</article>", title="Other")
    text = text_of(page)
    assert "1 May 1890" in text and "The last mill closes" in text and "1901" in text


def test_a_long_block_named_date_or_a_date_free_byline_stays() -> None:
    long_note = ARTICLE[0] + " " + ARTICLE[1]  # > DATELINE_CHARS: a section, not a dateline
    page = doc(
        "<article><p>Posted by Ann Reed on the first of March</p>"
        f"<div class='update-notes'>{long_note}</div>{paras(BODY)}</article>",
        title="Other",
    )
    text = text_of(page)
    assert "Posted by Ann Reed" in text and ARTICLE[1] in text


def test_author_lines_of_a_series_of_posts_stay() -> None:
    posts = "".join(
        f"<div class='post'><div class='post-meta'><span itemprop='author'>user{k}</span></div>"
        f"<p>{OTHER[k]} {ARTICLE[k]}</p><p>{OTHER[k + 2]} {ARTICLE[k + 2]}</p></div>"
        for k in range(2)
    )
    text = text_of(doc(f"<main>{posts}</main>", title="Thread"))
    assert "user0" in text and "user1" in text  # two posts are a series already


def test_a_delivery_date_on_a_product_page_stays() -> None:
    page = doc(
        f"<main><h1>Trail Jacket</h1><p>Delivery <time>Sat 7 Mar</time> free</p><p>{ARTICLE[0]}</p></main>",
        title="Trail Jacket | Shop",
    )
    assert "Sat 7 Mar" in text_of(page)


# --- breadcrumbs --------------------------------------------------------------------------------


def test_a_breadcrumb_trail_that_reads_as_prose_is_pruned() -> None:
    crumbs = (
        "<div id='breadcrumb'><a href='/'>Home</a> &gt; <a href='/news/'>News</a> &gt; "
        "<span>How the stone walls of the valley outlived every one of its mills</span></div>"
    )
    page = doc(f"<article>{crumbs}{paras(BODY)}</article>", title="Other")
    text = text_of(page)
    assert "Home" not in text and "every one of its mills" not in text
    assert text.startswith(ARTICLE[0])


def test_content_in_a_layout_named_after_breadcrumbs_stays() -> None:
    page = doc(f"<div class='page has-breadcrumbs'><article>{paras(BODY)}</article></div>", title="Other")
    assert ARTICLE[3] in text_of(page)
    long_trail = "<div class='breadcrumb'>" + paras(ARTICLE) + "</div>"  # past CRUMB_CHARS
    assert ARTICLE[2] in text_of(doc(f"<article>{long_trail}</article>", title="Other"))
