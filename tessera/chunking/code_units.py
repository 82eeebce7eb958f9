"""The code chunker's data: the block tree, units, scopes, pieces, and the final chunks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from tessera.chunking.assemble import Draft, assemble
from tessera.chunking.base import ChunkContext
from tessera.chunking.code_context import Frame, SourceLines
from tessera.types import Block, Chunk, ParsedDocument, SourceDocument

UNIT_KINDS = frozenset({"function", "class", "method", "statement", "comment", "import", "docstring"})
DEF_KINDS = frozenset({"function", "class", "method"})


@dataclass
class Node:
    """A unit block and the unit blocks it contains (``block`` None: the module)."""

    block: Block | None
    start: int
    end: int
    children: list[Node] = field(default_factory=list)


@dataclass(frozen=True)
class Unit:
    """One packable range at some level: a definition, a statement, a definition's head
    (decorators + signature, ``if x:``), or a degraded gap."""

    start: int
    end: int  # up to the next unit: fillers between units belong to the one before
    kind: str  # "def" | "class" | "stmt" | "head" | "degraded"
    node: Node | None
    path: tuple[str, ...]


@dataclass(frozen=True)
class Scope:
    """Where units are packed: heading path, enclosing frames, parent range (``parent_id``)."""

    path: tuple[str, ...]
    frames: tuple[Frame, ...]
    parent: tuple[int, int]


@dataclass(frozen=True)
class Piece:
    """A future chunk: trimmed range, rendered context header, and whether the first line
    gets its source indentation back (token windows start mid-line: they do not)."""

    start: int
    end: int
    header: str
    indent: bool
    path: tuple[str, ...]
    parent: tuple[int, int]
    flags: tuple[str, ...] = ()
    group: int = -1


def block_tree(parsed: ParsedDocument) -> Node:
    """Unit blocks nested by containment (the parser emits them so)."""
    root = Node(None, 0, len(parsed.text))
    stack = [root]
    units = sorted((b for b in parsed.blocks if b.kind in UNIT_KINDS), key=lambda b: (b.start, -b.end))
    for b in units:
        while len(stack) > 1 and not (stack[-1].start <= b.start and b.end <= stack[-1].end):
            stack.pop()
        node = Node(b, b.start, b.end)
        stack[-1].children.append(node)
        stack.append(node)
    return root


def common_path(paths: list[tuple[str, ...]]) -> tuple[str, ...]:
    """The longest common prefix of heading paths."""
    first = paths[0]
    n = len(first)
    for p in paths[1:]:
        n = min(n, len(p))
        while n and p[:n] != first[:n]:
            n -= 1
    return first[:n]


def build_chunks(
    doc: SourceDocument,
    parsed: ParsedDocument,
    ctx: ChunkContext,
    pieces: list[Piece],
    version: str,
    measure: Callable[[Piece], tuple[str, int]],
) -> list[Chunk]:
    """Chunks of the pieces: ids, neighbours, ``part:k/n`` per split definition, provenance.

    ``measure`` gives a piece's embedding text and its exact token count.
    """
    lines = SourceLines(parsed.text)
    groups: dict[int, list[int]] = {}
    for k, p in enumerate(pieces):
        if p.group >= 0:
            groups.setdefault(p.group, []).append(k)
    pieces = list(pieces)
    for idxs in groups.values():
        for j, k in enumerate(idxs):
            pieces[k] = replace(pieces[k], flags=(*pieces[k].flags, f"part:{j + 1}/{len(idxs)}"))
    drafts = []
    for p in pieces:
        emb, n = measure(p)
        drafts.append(
            Draft(
                start=p.start,
                end=p.end,
                embedding_text=emb,
                heading_path=p.path,
                anchor=f"L{lines.line(p.start)}-L{lines.line(p.end - 1)}",
                parent=p.parent,
                kind="code",
                flags=p.flags,
                tokens=n,
            )
        )
    return assemble(doc, parsed, ctx, drafts, version)
