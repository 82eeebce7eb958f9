"""``tessera diagnose``: why did retrieval miss this document for this user and question?

An operator command (it runs with the configuration file, so it sees every row of the tenant):
the report names, stage by stage, what happened to the document (listing, parse, chunking,
embedding, ranking, authorization, effective date, model) and the verdict, the first stage
that lost it, or the rank it was retrieved at. It quotes ids, offsets, ranks, ACL names and
dates, never chunk text. ``--json`` prints the same report as JSON (``GET /ops/diagnose``
answers it too).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from tessera.boundary import int_option, time_option
from tessera.cli_model import make_embedders
from tessera.config import TesseraConfig
from tessera.diagnose import DiagnoseRequest, Diagnosis, diagnose, parse_range
from tessera.search.options import MAX_K


def _range(text: str) -> tuple[int, int]:
    try:
        return parse_range(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e).split(": ", 1)[-1]) from None


def print_report(d: Diagnosis) -> None:
    """The human form: the verdict, one line per stage, the covering chunks and the ranks."""
    print(f"diagnose {d.tenant}/{d.doc_id} for {d.user}, k={d.k}")
    print(f"verdict: {d.verdict}")
    width = max(len(f.stage) for f in d.findings)
    for f in d.findings:
        print(f"  {f.stage:<{width}}  {f.status:<7}  {f.detail}")
    if d.chunks.covering:
        print("covering chunks:")
        for c in d.chunks.covering:
            flags = ",".join(c.flags) or "-"
            print(
                f"  #{c.position:<3} {c.chunk_id[:16]}  chars [{c.start}, {c.end})  bytes [{c.byte_start}, "
                f"{c.byte_end})  {c.token_count} tok  whole={'yes' if c.whole else 'no'}  flags={flags}"
            )
    if d.ranking:
        print("ranks (all rows / as the user would see it, within depth):")
        for r in d.ranking:
            print(f"  {r.mode:<8} {_rank(r.rank, r.score)}  /  {_rank(r.visible_rank, r.visible_score)}")


def _rank(rank: int | None, score: float | None) -> str:
    return "beyond depth" if rank is None else f"rank {rank} (score {score:.4f})"


def cmd_diagnose(args: argparse.Namespace, cfg: TesseraConfig) -> int:
    req = DiagnoseRequest(
        tenant=args.tenant,
        user=args.as_user,
        question=args.question,
        doc_id=args.doc,
        citation=args.citation,
        byte_range=args.range,
        expect=args.expect,
        k=args.k,
        as_of=args.as_of,
    )  # every option checked before anything is read
    report = diagnose(cfg, req, make_embedders(cfg, args.fake_embedder))
    if args.json:
        print(json.dumps(report.as_json(), indent=2, ensure_ascii=False))
    else:
        print_report(report)
    return 0


def add_parser(sub: Any) -> None:
    d = sub.add_parser(
        "diagnose", help="why retrieval missed a document: the stage that lost it, with evidence"
    )
    d.add_argument("--tenant", required=True, help="the tenant of the document")
    d.add_argument("--as", dest="as_user", required=True, metavar="USER", help="the user to diagnose for")
    d.add_argument("--question", required=True, help="the question that should have found the document")
    which = d.add_mutually_exclusive_group(required=True)
    which.add_argument("--doc", help="the document id (its path in the source)")
    which.add_argument("--citation", help="a citation tessera:<tenant>/<chunk id> naming the chunk expected")
    d.add_argument(
        "--range", type=_range, metavar="START:END", help="the source byte range that should answer"
    )
    d.add_argument("--expect", metavar="TEXT", help="text of the document that should answer")
    d.add_argument("-k", "--k", type=int_option(1, MAX_K), default=5, help="the k of the search (default 5)")
    d.add_argument("--as-of", type=time_option, help="ISO-8601 time for effective dates (default: now, UTC)")
    d.add_argument(
        "--fake-embedder",
        action="store_true",
        default=argparse.SUPPRESS,
        help="use the deterministic hash embedder instead of the model",
    )
    d.add_argument("--json", action="store_true", help="print the report as JSON")
    d.set_defaults(func=cmd_diagnose)
