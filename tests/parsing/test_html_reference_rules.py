"""Main-content rules of issue 15 (``tessera-html/11``), each attacked from both sides.

- A list (``ol``/``ul``/``dl``) is never the scored container: a paywalled paper whose
  reference list, rich in commas, outscores its abstract keeps the abstract too; a page that
  is a list of long items keeps every item.
- An author box (``class="m-author"``, ``author-bio``) is a widget: pruned even when it reads as
  prose beside an article, kept when it is the page (a profile) or one of a series (forum posts).

Fixtures are small pages written here.
"""

from __future__ import annotations

from tests.parsing.test_html_content_rules import ARTICLE, OTHER, page, paras, parse

REFERENCES = [
    f"Author{k} A, Writer{k} B, Editor{k} C. Title of cited study number {k}, with a subtitle, "
    f"methods, results and more. J Example Res. 20{k:02d};{k}(2):{100 + k}-{110 + k}."
    for k in range(40)
]


def _paper(abstract: list[str]) -> str:
    refs = "".join(f"<li><p class='ref-text'>{r}</p></li>" for r in REFERENCES)
    return page(
        "<main class='c-article-main'><div class='c-article-body'>"
        "<section><h2>Abstract</h2><div class='c-section'>"
        + "".join(f"<h3>Part {k}</h3><p>{t}</p>" for k, t in enumerate(abstract))
        + "</div></section>"
        "<div class='c-notes'><p>This is a preview of subscription content.</p></div>"
        "<section><h2>References</h2><ol class='c-article-references'>" + refs + "</ol></section>"
        "</div></main>"
    )


def test_a_reference_list_does_not_push_the_abstract_out() -> None:
    text = parse(_paper(ARTICLE[:3]))
    assert ARTICLE[0] in text and ARTICLE[2] in text  # the abstract
    assert REFERENCES[0] in text and REFERENCES[39] in text  # and the references


def test_a_page_that_is_a_list_keeps_its_items() -> None:
    items = "".join(f"<li><p>{t}</p></li>" for t in ARTICLE * 3)
    nav = (
        "<nav><ul>" + "".join(f"<li><a href='/s/{k}'>Section {k}</a></li>" for k in range(8)) + "</ul></nav>"
    )
    text = parse(page(nav + "<div class='wrap'><ol class='steps'>" + items + "</ol></div>"))
    assert all(t in text for t in ARTICLE)
    assert "Section 3" not in text


def _author_box(bio: str) -> str:
    # the shape of a blog's author card: a heading, an avatar and name, the biography with
    # links, a link to the author's archive
    return (
        "<div class='columns'><div class='column is-half'><h2 class='section-title'>Author</h2>"
        "<div class='m-author'><div class='m-author__header'><span class='avatar'><img src='a.png'/>"
        "</span><div class='m-author__header-content'><div class='m-author__name'>Ada Example</div>"
        f"</div></div><div class='m-author__description'>{bio}</div><div class='m-author__meta'>"
        "<a href='/authors/ada/'>Author Archives</a></div></div></div></div>"
    )


BIO = (
    OTHER[0] + " She also co-produced <a href='https://v.example/'>a video series</a> and organizes "
    "<a href='http://c.example/'>a conference</a> held in the valley."
)


def test_an_author_box_after_the_article_is_dropped() -> None:
    for box in (_author_box(BIO), f"<div class='author-bio'><p>{BIO}</p></div>"):
        body = (
            "<main class='site-main'><article class='m-post post'><div class='columns is-centered'>"
            "<div class='column'>" + paras(ARTICLE * 2) + "</div>" + box + "</div></article></main>"
        )
        text = parse(page(body))
        assert ARTICLE[0] in text and ARTICLE[3] in text
        assert OTHER[0] not in text and "Author Archives" not in text, box


def test_an_author_profile_page_keeps_the_biography() -> None:
    body = "<main><h1>About Ada</h1>" + _author_box(" ".join(OTHER)) + "</main>"
    text = parse(page(body))
    assert OTHER[0] in text and OTHER[3] in text


def test_posts_of_a_thread_each_with_an_author_class_are_kept() -> None:
    posts = "".join(
        f"<div class='post'><div class='post-author'>user{k}</div>"
        f"<div class='author-text'><p>{t}</p></div></div>"
        for k, t in enumerate(OTHER)
    )
    text = parse(page("<main><h1>Thread</h1>" + posts + "</main>"))
    assert all(t in text for t in OTHER)
