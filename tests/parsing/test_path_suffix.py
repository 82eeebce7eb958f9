"""``path_suffix`` is ``PurePosixPath.suffix`` without building a path (a listing's hot path)."""

from __future__ import annotations

from pathlib import PurePosixPath

from hypothesis import given
from hypothesis import strategies as st

from tessera.parsing.base import parser_for_path, path_suffix

_PART = st.text(st.sampled_from("ab.MD/ _-é"), max_size=10)


@given(st.lists(_PART, min_size=1, max_size=4).map("/".join))
def test_path_suffix_is_purepath_suffix(path: str) -> None:
    assert path_suffix(path) == PurePosixPath(path).suffix


def test_edge_names() -> None:
    for path in ("a.md", ".md", "a.", "a..md", "x.md/.", "dir.md/", "..", ".", "a/.b", "a/b.tar.gz", ""):
        assert path_suffix(path) == PurePosixPath(path).suffix, path
    assert parser_for_path("Notes.MARKDOWN") == "text/markdown"
    assert parser_for_path("dir.md/") == "text/markdown"  # as before: the last name's suffix
    assert parser_for_path(".md") is None
