"""The README's reliability table, generated from the ``@pytest.mark.scenario`` markers.

    python -m bench.scoreboard_table            # prints the Markdown table
    python -m bench.scoreboard_table --check    # exits 1 when a scenario has no test

Scenario titles come from ``../shared/RELIABILITY.md`` when it is there; the guarantee column
is Tessera's own statement of what holds (``GUARANTEES``).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections import defaultdict
from pathlib import Path

from tests.scoreboard import RELIABILITY

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT.parent / "shared" / "RELIABILITY.md"
IDS = RELIABILITY  # one list of scenario ids, the scoreboard plugin's
GUARANTEES = {
    "A1": "an unchanged re-run embeds nothing and commits no version; duplicated text is embedded once; "
    "an id is never stored twice",
    "A2": "a shrunk document has exactly its new chunks; other documents and tenants are untouched",
    "A3": "an ACL-only change republishes the ACL from cached vectors; the removed reader loses the document",
    "A4": "every published version holds all old or all new chunks of a document, whatever the batch size",
    "A5": "deletes are scoped to the removed documents of one tenant, with exact counts",
    "A6": "an outage (error, empty answer, cut pagination, expired token) deletes nothing and fails the run",
    "A7": "losing more than the guard's share, or everything unproven, needs an explicit override",
    "A8": "a failed delete fails the run, loses nothing, and the next run finishes the cleanup",
    "A9": "a failed or killed commit records nothing; a retry writes the rows",
    "A10": "a failure mid-run purges nothing; a quarantined document keeps its chunks; no double delete",
    "B1": "transient faults: only the failed batch is retried, with jittered, capped backoff",
    "B2": "permanent faults: one call, `Failure(allow_retries=False)`, the previous version stays",
    "B3": "NaN, infinite, wrong-dimension, too few or no vectors are refused before publishing",
    "B4": "the cache is keyed per tenant and model (sha256 of the text); no vector crosses models",
    "C1": "SIGKILL at each publish phase: the table opens at the old or the complete new version",
    "C2": "one writer per tenant (lock, fencing); different tenants commit at the same time",
    "C3": "on a throttled store an operation succeeds within the bound or fails typed; never hangs",
    "C4": "readers during publish and maintenance see whole versions; a pruned version is an error",
    "C5": "a store that ignores conditional PUTs is detected at startup and runs are refused",
    "C6": "restore republishes a publication as a new version; tags survive pruning",
    "C7": "open and maintenance stay within their bounds as publishes pile up; tags kept; no orphans",
    "C8": "no merge_insert with an empty source; exact delete counts with indexed join keys",
    "D1": "transient faults retried inside the step; a killed worker is retried from failure, "
    "reusing finished steps, with no double publication",
    "D2": "blocking checks (guard, quality gate) stop the publish; the previous version is served",
    "D3": "one failing tenant partition leaves the others published",
    "D4": "tenant partition keys round-trip; deleting a tenant purges it explicitly",
    "D5": "a hanging parser or embedder is ended by its budget; the run fails cleanly",
    "E1": "corrupt, truncated, empty and wrong-type files are typed per-file failures; old chunks kept",
    "E2": "encrypted files are labelled encrypted; owner-only files are extracted; unknown algorithms typed",
    "E3": "parsing runs in a child with time and memory limits; crash, timeout or OOM is per file",
    "E4": "malformed and deeply nested code degrades to windows within a deadline",
    "E5": "pathological Markdown finishes within its budget",
    "E6": "deep and huge HTML never recurses or runs out of memory; too large is quarantined",
    "F1": "zero rows of another tenant at any k, mode and index state, and no starvation",
    "F2": "empty or hostile claims match nothing; values are escaped",
    "F3": "a revoked reader loses every path, within a measured bound",
    "F4": "hidden and instruction-like content is flagged and excluded; logs hold no chunk text",
}


def titles() -> dict[str, str]:
    if not SPEC.exists():
        return {}
    found = re.findall(r"\*\*([A-F]\d+) ([^*]+)\*\*", SPEC.read_text(encoding="utf-8"))
    return {sid: title.strip() for sid, title in found}


def markers(tests: Path = ROOT / "tests") -> dict[str, list[str]]:
    """Scenario id -> sorted test files whose tests carry it."""
    out: dict[str, set[str]] = defaultdict(set)
    for path in sorted(tests.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for deco in node.decorator_list:
                if isinstance(deco, ast.Call) and ast.unparse(deco.func).endswith("mark.scenario"):
                    for arg in deco.args:
                        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                            out[arg.value].add(path.name)
    return {sid: sorted(files) for sid, files in out.items()}


def table() -> str:
    names, covered = titles(), markers()
    lines = ["| scenario | guarantee | tests |", "|---|---|---|"]
    for sid in IDS:
        files = ", ".join(f"`{f}`" for f in covered.get(sid, [])) or "**none**"
        title = names.get(sid, "")
        lines.append(f"| {sid} {title} | {GUARANTEES[sid]} | {files} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--check", action="store_true", help="fail when a scenario has no test")
    args = p.parse_args(argv)
    print(table())
    missing = [sid for sid in IDS if sid not in markers()]
    if args.check and missing:
        print(f"no test for {missing}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
