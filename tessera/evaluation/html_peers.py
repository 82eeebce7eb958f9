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


@dataclass(frozen=True)
class Peer:
    name: str
    version: str
    extract: Callable[[bytes], str]


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


def _readability(raw: bytes) -> str:
    import lxml.html
    from readability import Document

    summary = Document(raw).summary(html_partial=True)
    if not summary.strip():
        return ""
    tree = lxml.html.fromstring(summary)
    return " ".join(" ".join(tree.itertext()).split())


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
        peers.append(Peer("readability", read, _readability))
    res = _version("resiliparse")
    if res and importlib.util.find_spec("resiliparse") is not None:
        peers.append(Peer("resiliparse", res, _resiliparse))
    return peers
