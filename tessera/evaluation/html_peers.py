"""Competitor extractors, measured in the same run when installed (bench-only extras).

Each peer is a name and a function from the page's bytes to plain text. A peer whose library
is missing is left out (:func:`available_peers` says which were found); one that fails on a
page scores that page as empty, and the failure is counted.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass

from tessera.evaluation.html_sets import html_block_text, html_text_nodes


@dataclass(frozen=True)
class Peer:
    name: str
    version: str
    extract: Callable[[bytes], str]
    timed: bool = True
    """False: a second rendering of another peer's work, whose time is that peer's."""
    rendering: str = "text"
    """``text``: as a browser shows it; ``nodes``: a space between all text nodes."""


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _trafilatura(include_comments: bool) -> Callable[[bytes], str]:
    def run(raw: bytes) -> str:
        import trafilatura

        out = trafilatura.extract(raw, include_comments=include_comments)
        return out or ""

    return run


def _readability_renderings() -> tuple[Callable[[bytes], str], Callable[[bytes], str]]:
    """readability-lxml's article, rendered two ways from one ``summary()`` per page:

    - ``readability``: every text node with a space between nodes, as the Mozilla set's gold
      is rendered from Readability.js's output (and as this peer has always been scored);
    - ``readability_text``: as a browser shows it, a space only at block boundaries
      (:func:`~tessera.evaluation.html_sets.html_block_text`), the way Tessera's and
      trafilatura's own texts read.

    The second reuses the summary the first made for the same page (the pages are scored in
    turn), so it is not timed."""
    last: dict[str, object] = {}

    def summary(raw: bytes) -> str:
        if last.get("raw") is not raw:
            from readability import Document

            last.clear()
            last["raw"], last["summary"] = raw, Document(raw).summary(html_partial=True)
        return str(last["summary"])

    def nodes(raw: bytes) -> str:
        return html_text_nodes(summary(raw))

    def text(raw: bytes) -> str:
        return html_block_text(summary(raw))

    return nodes, text


def _resiliparse(raw: bytes) -> str:
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.encoding import bytes_to_str, detect_encoding

    return str(extract_plain_text(bytes_to_str(raw, detect_encoding(raw)), main_content=True))


def available_peers() -> list[Peer]:
    peers: list[Peer] = []
    traf = _version("trafilatura")
    if traf and importlib.util.find_spec("trafilatura") is not None:
        peers.append(Peer("trafilatura", traf, _trafilatura(True)))
        peers.append(Peer("trafilatura_no_comments", traf, _trafilatura(False)))
    read = _version("readability-lxml")
    if read and importlib.util.find_spec("readability") is not None:
        nodes, text = _readability_renderings()
        peers.append(Peer("readability", read, nodes, rendering="nodes"))
        peers.append(Peer("readability_text", read, text, timed=False))
    res = _version("resiliparse")
    if res and importlib.util.find_spec("resiliparse") is not None:
        peers.append(Peer("resiliparse", res, _resiliparse))
    return peers
