"""Recall@5 of the responder's memory scoring, per offline embedder, side by side.

    python -m streams.respond.evaluate_recall [FILE] [--providers st,use,e5] [--floors 0.2,0.3]

recall@5 = mean, over the cases that have relevant facts, of
|relevant ∩ top5| / |relevant|. Cases whose ``relevant`` list is empty have
no recall to measure and are left out of the mean; they are reported apart as
``empty_ok``: the share of them for which nothing is injected (only a
relevance floor can achieve that). recall@3 (same definition, first 3) is
printed too: with 5–12 facts per case, recall@5 saturates quickly. Each floor is also shown, so the cost of
a floor in recall@5 and its gain on the empty cases are visible together.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from streams.learn.fixtures import FIXTURES_DIR
from streams.respond.rank import build_configured_embedder, load_cases, rank_case
from streams.respond.recall import TOP_K

DEFAULT_FILE = FIXTURES_DIR / "recall.jsonl"
ALL_PROVIDERS = ("sentence-transformers", "use", "e5")


def recall_at_k(cases, tops) -> tuple[float, float, int]:
    """(recall@k over cases with relevant facts, share of empty cases with nothing injected, n)."""
    scores, empty_ok, empty_n = [], 0, 0
    for case, top in zip(cases, tops):
        rel = set(case.get("relevant", []))
        if not rel:
            empty_n += 1
            empty_ok += (len(top) == 0)
            continue
        scores.append(len(rel & set(top)) / len(rel))
    mean = sum(scores) / len(scores) if scores else 0.0
    return mean, (empty_ok / empty_n if empty_n else 1.0), len(scores)


def evaluate(provider: str, cases, floors: list[float | None], path=None) -> dict:
    t0 = time.perf_counter()
    embedder = build_configured_embedder(provider)
    embedder.embed_queries(["aquecimento"])  # some engines load lazily: count it as load
    embedder.embed_passages(["aquecimento"])
    load_s = time.perf_counter() - t0
    from streams.respond.recall_examples import RecallExamples

    examples = RecallExamples.leaving_out(embedder, path)  # a readable set: without its own examples
    if examples is not None:
        examples.warm()
    out = {"provider": provider, "model": embedder.name, "dim": embedder.dim,
           "load_s": round(load_s, 2), "floors": {}}
    for floor in floors:
        t1 = time.perf_counter()
        tops = [rank_case(c, embedder, TOP_K, floor, examples) for c in cases]
        secs = time.perf_counter() - t1
        r, empty_ok, n = recall_at_k(cases, tops)
        r3, _, _ = recall_at_k(cases, [t[:3] for t in tops])
        out["floors"][str(floor)] = {"recall@5": round(r, 3), "recall@3": round(r3, 3), "empty_ok": round(empty_ok, 2),
                                     "mean_injected": round(sum(map(len, tops)) / len(tops), 2),
                                     "cases": n, "rank_s": round(secs, 2),
                                     "ms_per_case": round(1000 * secs / len(cases), 1)}
    return out


def loso(embedder, root: Path = Path("."), taus=(None,), betas=(None,)) -> list[dict]:
    """recall@3 / @5 per readable set (``recall_examples.READABLE``) with the labelled examples of
    the other sets only (leave-one-set-out), against none; ``taus``/``betas``: the vote's settings."""
    from streams.respond.recall_examples import BETA, READABLE, TAU, RecallExamples

    sets = {s: load_cases(root / p) for s, p in READABLE.items() if (root / p).exists()}
    rows = []
    for tau, beta in [(None, None)] + [(t or TAU, b or BETA) for t in taus for b in betas]:
        row: dict = {"tau": tau, "beta": beta}
        for s, cases in sets.items():
            ex = None if tau is None else RecallExamples(embedder, exclude_sources={s}, tau=tau, beta=beta)
            tops = [rank_case(c, embedder, TOP_K, examples=ex) for c in cases]
            row[s] = (recall_at_k(cases, [t[:3] for t in tops])[0], recall_at_k(cases, tops)[0])
        rows.append(row)
    return rows


_SETTINGS = ("tau", "beta")


def nested(rows: list[dict]) -> dict[str, tuple[dict, tuple[float, float]]]:
    """Per set, the settings that ``loso`` found best on the *other* sets (mean recall@3 + recall@5;
    ties go to the earlier row) and that row's figure on the set: an honest figure for choosing the
    settings by leave-one-set-out, where the best row of the table is chosen on every set at once."""
    if not rows:
        return {}
    sets = [k for k in rows[0] if k not in _SETTINGS]
    out = {}
    for s in sets:
        others = [t for t in sets if t != s] or [s]
        best = max(rows, key=lambda r: sum(r[t][0] + r[t][1] for t in others) / len(others))
        out[s] = ({k: best[k] for k in _SETTINGS}, best[s])
    return out


def print_loso(rows: list[dict]) -> None:
    for row in rows:
        sets = [k for k in row if k not in _SETTINGS]
        mean = sum(row[s][0] for s in sets) / len(sets)
        print(f"vote tau {row['tau']} beta {row['beta']}: "
              + "  ".join(f"{s} {row[s][0]:.3f}/{row[s][1]:.3f}" for s in sets) + f"  mean@3 {mean:.3f}", flush=True)
    if len(rows) > 2:   # more than "no vote" against one setting: the choice itself is measured out-of-set
        per = nested(rows)
        mean3 = sum(f[0] for _, f in per.values()) / len(per)
        mean5 = sum(f[1] for _, f in per.values()) / len(per)
        print("nested (settings chosen on the other sets): "
              + "  ".join(f"{s} {f[0]:.3f}/{f[1]:.3f} (tau {c['tau']} beta {c['beta']})" for s, (c, f) in per.items())
              + f"  mean {mean3:.3f}/{mean5:.3f}", flush=True)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", nargs="?", default=str(DEFAULT_FILE))
    p.add_argument("--providers", default=",".join(ALL_PROVIDERS))
    p.add_argument("--floors", default="0.2,0.3,0.8", help="relevance floors to compare with none")
    p.add_argument("--json", action="store_true", help="one JSON line per provider")
    p.add_argument("--loso", action="store_true", help="leave-one-set-out recall@3/@5 of the readable sets, "
                   "without and with the labelled examples' vote (configured embedder)")
    p.add_argument("--taus", default="", help="with --loso: the vote's fact-similarity floors to compare")
    p.add_argument("--betas", default="", help="with --loso: the vote's weights to compare")
    a = p.parse_args(argv)
    if a.loso:
        floats = lambda x: [float(v) for v in x.split(",") if v.strip()] or [None]  # noqa: E731
        print_loso(loso(build_configured_embedder(), taus=floats(a.taus), betas=floats(a.betas)))
        return
    cases = load_cases(a.file)
    floors: list[float | None] = [None] + [float(x) for x in a.floors.split(",") if x.strip()]
    results = []
    for prov in [x.strip() for x in a.providers.split(",") if x.strip()]:
        try:
            res = evaluate(prov, cases, floors, a.file)
        except Exception as e:  # a missing optional model must not hide the others
            res = {"provider": prov, "error": f"{type(e).__name__}: {e}"}
        results.append(res)
        if a.json:
            print(json.dumps(res, ensure_ascii=False), flush=True)
    if a.json:
        return
    print(f"recall cases: {len(cases)} ({sum(1 for c in cases if not c.get('relevant'))} with no relevant fact, "
          "excluded from recall@5; 'empty_ok' = share of those with nothing injected)")
    print(f"{'provider':22} {'model':24} {'floor':>6} {'recall@5':>9} {'recall@3':>9} {'empty_ok':>9} {'inj/case':>9} "
          f"{'ms/case':>8} {'load s':>7}")
    for res in results:
        if "error" in res:
            print(f"{res['provider']:22} ERROR {res['error']}")
            continue
        for floor, m in res["floors"].items():
            print(f"{res['provider']:22} {res['model']:24} {floor:>6} {m['recall@5']:>9.3f} "
                  f"{m['recall@3']:>9.3f} {m['empty_ok']:>9.2f} {m['mean_injected']:>9.2f} {m['ms_per_case']:>8.1f} "
                  f"{res['load_s']:>7.2f}")


if __name__ == "__main__":
    main()


def recall_metrics(folder, embedder) -> dict:
    """What ``make eval`` reports for recall ranking on ``folder``/recall.jsonl:
    recall@3 and recall@5 of the responder's own scoring (``rank_case``)."""
    from streams.respond.recall_examples import RecallExamples

    cases = load_cases(Path(folder) / "recall.jsonl")
    # the labelled examples of every set but this folder's own: the figure stays out-of-sample
    examples = RecallExamples.leaving_out(embedder, folder)
    tops = [rank_case(c, embedder, TOP_K, examples=examples) for c in cases]
    r5, _, n = recall_at_k(cases, tops)
    r3, _, _ = recall_at_k(cases, [t[:3] for t in tops])
    misses = [{"case_id": c["case_id"], "query": c["query"],
               "missing": [c["contact_facts"][i]["content"] for i in c["relevant"] if i not in t[:3]],
               "top3": [c["contact_facts"][i]["content"] for i in t[:3]]}
              for c, t in zip(cases, tops) if set(c.get("relevant", [])) - set(t[:3])]
    return {"recall@3": r3, "recall@5": r5, "cases": n, "misses": misses}
