"""Summaries of an HTML evaluation: per page type and overall, worst pages, a text table."""

from __future__ import annotations

from typing import Any

from tessera.evaluation.html_metrics import mean, snippet_prf


def _agg(rows: list[dict[str, Any]], name: str) -> dict[str, Any]:
    scores = [r["scores"][name] for r in rows]
    f1s = [s["f1"] for s in scores]
    out: dict[str, Any] = {
        "pages": len(rows),
        "f1": round(mean(f1s), 4),
        "p": round(mean([s["p"] for s in scores]), 4),
        "r": round(mean([s["r"] for s in scores]), 4),
        "f1_min": round(min(f1s), 4) if f1s else 0.0,
        "empty": sum(1 for s in scores if s["empty"]),
    }
    words = [s["f1_word"] for s in scores if "f1_word" in s]
    if words:
        out["f1_word"] = round(mean(words), 4)
    chars = [s["f1_char"] for s in scores if "f1_char" in s]
    if chars:
        out["f1_char_cjk"] = round(mean(chars), 4)
        out["cjk_pages"] = len(chars)
    if any("with_total" in s for s in scores):
        tp = sum(s.get("with_found", 0) for s in scores)
        fn = sum(s.get("with_total", 0) - s.get("with_found", 0) for s in scores)
        fp = sum(s.get("without_found", 0) for s in scores)
        prf = snippet_prf(tp, fn, fp)
        wt = sum(s.get("with_total", 0) for s in scores)
        bt = sum(s.get("without_total", 0) for s in scores)
        out["snippets"] = {
            "with_hit_rate": round(tp / wt, 4) if wt else None,
            "without_hit_rate": round(fp / bt, 4) if bt else None,
            "p": round(prf.p, 4),
            "r": round(prf.r, 4),
            "f1": round(prf.f1, 4),
        }
    return out


def summarize(
    rows: list[dict[str, Any]], names: list[str], renderings: dict[str, str] | None = None
) -> dict[str, Any]:
    """Per type and overall scores of every extractor in ``names``. ``renderings`` names how
    each one's text is rendered (``text``: as a browser shows it; ``nodes``: a space between
    all text nodes, the Mozilla gold's convention); ``like_for_like`` compares each Tessera
    rendering only with the peers rendered the same way. Unlisted names are ``text``."""
    kinds = renderings or {}
    types = sorted({r["type"] for r in rows})
    by_type = {t: {n: _agg([r for r in rows if r["type"] == t], n) for n in names} for t in types}
    gaps: dict[str, float] = {}
    like: dict[str, dict[str, float]] = {}
    for t, scores in by_type.items():
        peers = {n: v["f1"] for n, v in scores.items() if not n.startswith("tessera")}
        if not peers:
            continue
        gaps[t] = round(scores["tessera"]["f1"] - max(peers.values()), 4)
        for n in (n for n in names if n.startswith("tessera")):
            kind = kinds.get(n, "text")
            same = [f for p, f in peers.items() if kinds.get(p, "text") == kind]
            if same:
                like.setdefault(t, {})[kind] = round(scores[n]["f1"] - max(same), 4)
    return {
        "set": rows[0]["set"] if rows else "",
        "pages": len(rows),
        "extractors": names,
        "renderings": {n: kinds.get(n, "text") for n in names},
        "overall": {n: _agg(rows, n) for n in names},
        "by_type": by_type,
        "tessera_minus_best_peer": gaps,
        "like_for_like": like,
        "offsets": {
            "blocks_checked": sum(r["blocks_checked"] for r in rows),
            "chunks_checked": sum(r["chunks_checked"] for r in rows),
            "violations": sum(r["offset_violations"] for r in rows),
            "pages_with_violations": [r["page"] for r in rows if r["offset_violations"]],
        },
        "silently_empty": [r["page"] for r in rows if r["silently_empty"]],
        "errors": {r["page"]: r["error"] for r in rows if r["error"]},
        "warned": {
            r["page"]: [w for w in r["warnings"] if w.startswith(("thin_extraction", "empty_extraction"))]
            for r in rows
            if any(w.startswith(("thin_extraction", "empty_extraction")) for w in r["warnings"])
        },
    }


def worst(report: dict[str, Any], n: int) -> list[dict[str, Any]]:
    rows = sorted(report["per_page"], key=lambda r: (r["scores"]["tessera"]["f1"], r["page"]))
    return rows[:n]


def worst_pages_md(report: dict[str, Any], n: int = 15) -> str:
    names = report["extractors"]
    head = "| page | type | " + " | ".join(f"{x} F1" for x in names) + " | Tessera P / R | warnings |"
    lines = [f"# Worst pages for Tessera ({report['set']}, {report['pages']} pages)", "", head]
    lines.append("|" + "---|" * (len(names) + 4))
    for r in worst(report, n):
        s = r["scores"]
        t = s["tessera"]
        cells = " | ".join(f"{s[x]['f1']:.3f}" for x in names)
        warn = "; ".join(w.split(":", 1)[0] for w in r["warnings"]) or r["error"]
        lines.append(f"| {r['page']} | {r['type']} | {cells} | {t['p']:.3f} / {t['r']:.3f} | {warn} |")
    return "\n".join(lines) + "\n"


def format_table(report: dict[str, Any], n: int = 15) -> str:
    names = report["extractors"]
    rows = [f"set {report['set']}: {report['pages']} pages"]
    rows.append(f"{'type':<15}" + "".join(f"{x[:22]:>24}" for x in names))
    for t, scores in [*report["by_type"].items(), ("ALL", report["overall"])]:
        cells = "".join(
            f"{scores[x]['f1']:>10.3f} ({scores[x]['p']:.2f}/{scores[x]['r']:.2f})" for x in names
        )
        rows.append(f"{t:<15}{cells}")
    for x in names:
        snip = report["overall"][x].get("snippets")
        if snip:
            rows.append(f"snippets {x}: {snip}")
    off = report["offsets"]
    rows.append(
        f"offsets: {off['violations']} violations over {off['blocks_checked']} blocks and "
        f"{off['chunks_checked']} chunks; silently empty: {len(report['silently_empty'])}; "
        f"warned: {len(report['warned'])}; errors: {len(report['errors'])}"
    )
    for t, gap in report.get("like_for_like", {}).items():
        cells = ", ".join(f"{kind} {g:+.3f}" for kind, g in gap.items())
        rows.append(f"like for like, Tessera minus the best peer rendered the same way, {t}: {cells}")
    rows.append("speed (MB/s): " + ", ".join(f"{k} {v['mb_per_s']}" for k, v in report["speed"].items()))
    if "speed_vs_trafilatura" in report:
        rows.append(f"tessera speed vs trafilatura: {report['speed_vs_trafilatura']}x")
    rows.append("")
    rows.append(worst_pages_md(report, n))
    return "\n".join(rows)
