"""The folder connector builds each document's URI by string; it must equal ``Path.as_uri``."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tessera.sources.folder import file_uri

_NAME = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"), min_size=1, max_size=12
).filter(lambda s: s not in (".", ".."))


@given(
    base=st.lists(_NAME, max_size=3).map(lambda parts: "/" + "/".join(parts)),
    rel=st.lists(_NAME, min_size=1, max_size=3).map("/".join),
)
def test_file_uri_is_path_as_uri(base: str, rel: str) -> None:
    assert file_uri(base.rstrip("/"), rel) == (Path(base) / rel).as_uri()


def test_file_uri_of_the_filesystem_root() -> None:
    assert file_uri("", "a b.md") == "file:///a%20b.md"


@given(
    base=st.lists(_NAME, max_size=3).map(lambda parts: "/" + "/".join(parts)),
    rel=st.lists(
        st.text(st.sampled_from("aZ09_.~-%+ é"), min_size=1, max_size=8).filter(
            lambda s: s not in (".", "..")
        ),
        min_size=1,
        max_size=3,
    ).map("/".join),
)
def test_plain_names_take_the_short_way_and_still_equal_as_uri(base: str, rel: str) -> None:
    """Names of the characters percent-encoding keeps, mixed with some it does not (``%``, ``+``,
    a space, a non-ASCII letter): the same URI either way, under any folder."""
    assert file_uri(base.rstrip("/"), rel) == (Path(base) / rel).as_uri()
