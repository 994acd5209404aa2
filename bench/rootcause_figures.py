"""Root-cause figures shared by ``bench/service.py`` and ``bench/e2e.py`` (issue 43).

Over the flagged planted failures of a split: how many got a stated root cause (not
``undetermined``), how many of those are right, and the root cause right counting
``undetermined`` as wrong. ``leave_one_domain_out`` refits the root-cause decision's weights
(``ragsieve.jobs.verdicts.ledger.fit_weights``, what ``judges fit`` runs) on the tune traces of
every domain but one and reads the held-out traces of that one, from the evidence the job
stored with each verdict (``samples.body.pieces``): the worst left-out domain is the figure.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
from collections.abc import Callable, Iterable
from types import SimpleNamespace
from typing import Any

from ragsieve.jobs.verdicts.ledger import (
    DEFAULT_WEIGHTS,
    UNDETERMINED,
    Piece,
    combine,
    fit_weights,
    loss,
)

Pair = tuple[Any, dict[str, Any]]  # (planted trace, the job's decision)
# bench/conversations.py's planted kinds (its dump names the kind, not the expectation)
CONVERSATION_EXPECT = {"other_conversation": "generation", "refusal": "abstained_wrongly"}


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 3) if den else None


def stated(caught: Iterable[Pair], cause_of: Callable[[Pair], str | None] | None = None) -> dict:
    """Stated share, stated accuracy and accuracy counting ``undetermined`` wrong, over flagged
    planted failures (``cause_of``: a pair's root cause other than the job's, e.g. refitted)."""
    rows = list(caught)

    def said(p: Pair) -> str | None:
        return cause_of(p) if cause_of is not None else p[1]["root_cause"]

    told = [p for p in rows if said(p) != UNDETERMINED]
    right = sum(said(p) == p[0].expect for p in told)
    return {
        "flagged_failures": len(rows),
        "stated": len(told),
        "stated_share": _rate(len(told), len(rows)),
        "stated_right": right,
        "stated_accuracy": _rate(right, len(told)),
        "right_counting_undetermined_wrong": _rate(right, len(rows)),
    }


def _pieces(d: dict[str, Any]) -> list[Piece] | None:
    got = [Piece.from_dict(x) for x in d.get("pieces") or []]
    pieces = [p for p in got if p is not None]
    return pieces or None


def recombined(d: dict[str, Any], weights: dict[str, float]) -> str | None:
    """The job's decision recombined under ``weights`` from the pieces it stored."""
    pieces = _pieces(d)
    return d["root_cause"] if pieces is None else combine(pieces, weights).label


def rule_alone(p: Pair) -> str | None:
    """The root cause the documented rule alone gave (the first piece the job stored): what
    the job said before it weighed the other evidence."""
    pieces = _pieces(p[1])
    return p[1]["root_cause"] if pieces is None else pieces[0].cause


def leave_one_domain_out(
    caught: list[Pair], domain_of: Callable[[Any], str], tune: str = "tune", held: str = "heldout"
) -> dict[str, Any]:
    """For each domain: weights fitted on the tune split's other domains, read on the held-out
    split of that domain (and the defaults on the same traces, for comparison)."""
    domains = sorted({domain_of(t) for t, _ in caught})
    out: dict[str, Any] = {}
    for dom in domains:
        train = [
            (_pieces(d), t.expect)
            for t, d in caught
            if t.split == tune and domain_of(t) != dom and _pieces(d)
        ]
        weights = fit_weights([(p, y) for p, y in train if p is not None])
        test = [(t, d) for t, d in caught if t.split == held and domain_of(t) == dom]
        if not test:
            continue
        out[dom] = {
            "defaults": stated(test),
            "fitted": stated(test, lambda p, w=weights: recombined(p[1], w)),
            "weights_moved": {k: v for k, v in weights.items() if v != DEFAULT_WEIGHTS.get(k)},
        }
    per_domain = list(out.values())
    for kind in ("defaults", "fitted"):
        got = [v[kind] for v in per_domain if v[kind]["flagged_failures"]]
        out[f"worst_{kind}"] = {
            k: min((g[k] for g in got if g[k] is not None), default=None)
            for k in ("stated_share", "stated_accuracy", "right_counting_undetermined_wrong")
        }
    return out


def pooled_choice(
    caught: list[Pair], domain_of: Callable[[Any], str], tune: str = "tune", held: str = "heldout"
) -> dict[str, Any]:
    """The decision's weights chosen leave-one-domain-out over every bench's domains pooled.

    For each domain, ``fit_weights`` on the tune traces of all the others (``lodo[d]``); the
    chosen weights are each weight's median over those refits, so no domain's traces decide a
    weight alone. Each domain's held-out traces are read under the refit that never saw that
    domain (the left-out figure), under the current defaults and under the choice."""
    domains = sorted({domain_of(t) for t, _ in caught})
    refits: dict[str, dict[str, float]] = {}
    for dom in domains:
        train = [
            (p, t.expect)
            for t, d in caught
            if t.split == tune and domain_of(t) != dom and (p := _pieces(d))
        ]
        refits[dom] = fit_weights(train)
    names = list(DEFAULT_WEIGHTS)
    chosen = {k: float(statistics.median(w[k] for w in refits.values())) for k in names}
    per: dict[str, Any] = {}
    for dom in domains:
        test = [(t, d) for t, d in caught if t.split == held and domain_of(t) == dom]
        if not test:
            continue
        per[dom] = {
            "defaults": stated(test),
            "left_out": stated(test, lambda p, w=refits[dom]: recombined(p[1], w)),
            "chosen": stated(test, lambda p, w=chosen: recombined(p[1], w)),
            "refit_moved": {k: v for k, v in refits[dom].items() if v != DEFAULT_WEIGHTS[k]},
        }
    worst = {
        kind: {
            k: min((v[kind][k] for v in per.values() if v[kind][k] is not None), default=None)
            for k in ("stated_share", "stated_accuracy", "right_counting_undetermined_wrong")
        }
        for kind in ("defaults", "left_out", "chosen")
    }
    return {"chosen": chosen, "domains": per, "worst": worst}


CLOSE_BANDS = ("close_over_band", "close_under_band", "close_near_band", "close_lead_band")
BAND_GRID = (0.0, 0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.15)  # up to rootcause.CLOSE_REACH
NO_CLOSE = {**DEFAULT_WEIGHTS, **dict.fromkeys(CLOSE_BANDS, 0.0)}  # every close call off


def _loss(rows: list[tuple[list[Piece], str]], weights: dict[str, float]) -> float:
    """``fit_weights``' loss: a wrong stated cause 1, an undetermined one
    ``1 - ledger.STATED_RIGHT``."""
    return loss(rows, weights)[1]


def _best_bands(rows: list[tuple[list[Piece], str]]) -> dict[str, float]:
    """The close-call bands (every combination of ``BAND_GRID``) with the lowest loss on
    ``rows``; among equals the narrowest (fewest causes left undetermined)."""
    scored = [
        (
            _loss(rows, {**DEFAULT_WEIGHTS, **dict(zip(CLOSE_BANDS, combo, strict=True))}),
            sum(combo),
            combo,
        )
        for combo in itertools.product(BAND_GRID, repeat=len(CLOSE_BANDS))
    ]
    return dict(zip(CLOSE_BANDS, min(scored)[2], strict=True))


def close_band_choice(caught: list[Pair], domain_of: Callable[[Any], str]) -> dict[str, Any]:
    """The close-call bands chosen leave-one-domain-out on the tune split only.

    ``caught``: flagged planted failures from a run whose pieces hold every close call within
    ``rootcause.CLOSE_REACH`` (the stored ``distance`` says how near). For each domain, the
    bands with the lowest loss on the other domains' tune traces, read on that domain's tune
    traces (the left-out figure; the held-out split is never read to choose). ``median``: each
    band's median over the folds; ``chosen``: the median when the folds' bands lower the
    left-out loss summed over the folds, else no band at all (bands that never help a domain
    they were not chosen on are not kept)."""
    tune = [(t, d) for t, d in caught if t.split == "tune" and _pieces(d)]
    domains = sorted({domain_of(t) for t, _ in tune})
    folds: dict[str, Any] = {}
    left_out = {"bands": 0.0, "no_band": 0.0}
    for dom in domains:
        train = [(_pieces(d) or [], t.expect) for t, d in tune if domain_of(t) != dom]
        bands = _best_bands(train)
        test = [(t, d) for t, d in tune if domain_of(t) == dom]
        w = {**DEFAULT_WEIGHTS, **bands}
        rows = [(_pieces(d) or [], t.expect) for t, d in test]
        left_out["bands"] += _loss(rows, w)
        left_out["no_band"] += _loss(rows, NO_CLOSE)
        folds[dom] = {
            "bands": bands,
            "left_out_tune": stated(test, lambda p, w=w: recombined(p[1], w)),
            "left_out_tune_no_band": stated(test, lambda p: recombined(p[1], NO_CLOSE)),
        }
    median = {
        k: float(statistics.median(f["bands"][k] for f in folds.values())) for k in CLOSE_BANDS
    }
    helps = left_out["bands"] < left_out["no_band"] - 1e-9
    worst = {
        k: min(
            (f["left_out_tune"][k] for f in folds.values() if f["left_out_tune"][k] is not None),
            default=None,
        )
        for k in ("stated_share", "stated_accuracy", "right_counting_undetermined_wrong")
    }
    return {
        "median": median,
        "chosen": median if helps else dict.fromkeys(CLOSE_BANDS, 0.0),
        "left_out_loss": left_out,
        "folds": folds,
        "worst_left_out": worst,
    }


MARGIN_GRID = (0.25, 0.5, 0.75, 1.0)
MINIMAX = ("margin", "close_over_band", "close_under_band")
MIN_STATED = 0.7  # the share of flagged failures a choice must still state, in every domain


def _rate_loss(rows: list[tuple[list[Piece], str]], weights: dict[str, float]) -> tuple:
    """(``fit_weights``' loss per flagged failure, stated share) of one domain's rows."""
    n = len(rows) or 1
    stated_n = sum(combine(p, weights).label != UNDETERMINED for p, _ in rows)
    return _loss(rows, weights) / n, stated_n / n


def _minimax(table: dict[tuple, dict[str, tuple]], domains: list[str]) -> tuple:
    """The candidate whose worst domain (of ``domains``) loses least, every domain stating at
    least ``MIN_STATED``; among equals the lower mean loss, then the shipped value."""
    shipped = tuple(float(DEFAULT_WEIGHTS[k]) for k in MINIMAX)
    if not any(d in table[c] for c in table for d in domains):
        return shipped  # nothing to choose on (one domain, left out): the shipped values

    def key(c: tuple) -> tuple:
        got = [table[c][d] for d in domains if d in table[c]]
        ok = all(share >= MIN_STATED - 1e-9 for _, share in got)
        worst = max(loss for loss, _ in got)
        return (
            not ok,
            round(worst, 6),
            round(sum(x for x, _ in got) / len(got), 6),
            c != shipped,
        )

    return min(table, key=key)


def minimax_choice(caught: list[Pair], domain_of: Callable[[Any], str]) -> dict[str, Any]:
    """The margin and the context close-call bands (``MINIMAX``) chosen so that the worst
    domain is best: each candidate of ``MARGIN_GRID`` x ``BAND_GRID`` x ``BAND_GRID`` is read
    on every domain's tune traces (``fit_weights``' loss per flagged failure); the choice has
    the lowest worst-domain loss with every domain stating ``MIN_STATED`` of its failures.
    Leave one domain out: the same choice over the other domains' tune traces, read on the
    left-out domain's held-out traces (never read to choose); the worst of those is the
    figure. ``chosen`` is the choice over every domain."""
    split = {
        s: [(t, d) for t, d in caught if t.split == s and _pieces(d)] for s in ("tune", "heldout")
    }
    domains = sorted({domain_of(t) for t, _ in split["tune"]})
    rows = {
        (s, dom): [(_pieces(d) or [], t.expect) for t, d in split[s] if domain_of(t) == dom]
        for s in split
        for dom in domains
    }
    table: dict[tuple, dict[str, tuple]] = {}
    for cand in itertools.product(MARGIN_GRID, BAND_GRID, BAND_GRID):
        w = {**DEFAULT_WEIGHTS, **dict(zip(MINIMAX, cand, strict=True))}
        table[cand] = {d: _rate_loss(rows["tune", d], w) for d in domains if rows["tune", d]}
    chosen = _minimax(table, domains)
    as_chosen = {**DEFAULT_WEIGHTS, **dict(zip(MINIMAX, chosen, strict=True))}
    folds: dict[str, Any] = {}
    for dom in domains:
        pick = _minimax(table, [d for d in domains if d != dom])
        w = {**DEFAULT_WEIGHTS, **dict(zip(MINIMAX, pick, strict=True))}
        test = [(t, d) for t, d in split["heldout"] if domain_of(t) == dom]
        folds[dom] = {
            "picked": dict(zip(MINIMAX, pick, strict=True)),
            "left_out_heldout": stated(test, lambda p, w=w: recombined(p[1], w)),
            "defaults_heldout": stated(test),
            "chosen_heldout": stated(test, lambda p: recombined(p[1], as_chosen)),
            "chosen_tune_loss": round(table[chosen][dom][0], 4) if dom in table[chosen] else None,
        }
    worst = {
        kind: {
            k: min(
                (f[kind][k] for f in folds.values() if f[kind][k] is not None),
                default=None,
            )
            for k in (
                "stated_share",
                "stated_accuracy",
                "right_counting_undetermined_wrong",
            )
        }
        for kind in ("left_out_heldout", "defaults_heldout", "chosen_heldout")
    }
    return {
        "chosen": dict(zip(MINIMAX, chosen, strict=True)),
        # False: no candidate let every domain state MIN_STATED; the least bad one was taken
        "min_stated_met": all(share >= MIN_STATED - 1e-9 for _, share in table[chosen].values()),
        "shipped": {k: float(DEFAULT_WEIGHTS[k]) for k in MINIMAX},  # what the job weighs now
        "folds": folds,
        "worst": worst,
    }


def band_trade(
    caught: list[Pair], bands: dict[str, dict[str, float]], split: str
) -> dict[str, Any]:
    """Root-cause figures of ``split`` under each set of ``bands`` (name -> bands)."""
    rows = [(t, d) for t, d in caught if t.split == split]
    return {
        name: stated(rows, lambda p, w={**DEFAULT_WEIGHTS, **b}: recombined(p[1], w))
        for name, b in bands.items()
    }


def _read_dump(path: str, bench: str) -> list[Pair]:
    """Flagged planted failures (first askings) of a bench's ``--dump`` file."""
    out: list[Pair] = []
    for line in open(path, encoding="utf-8"):
        row = json.loads(line)
        meta = row.get("meta") or {}
        expect = row.get("expect") or CONVERSATION_EXPECT.get(row.get("kind", ""), "pass")
        if expect == "pass" or row.get("verdict") != "fail" or meta.get("repeat"):
            continue
        if bench == "xquad":
            dom = f"xquad_{row['q_lang']}"
        elif bench == "conversations":
            dom = f"conversations_{row['source']}"
        else:
            dom = str(meta.get("domain") or "unknown")
        t = SimpleNamespace(split=row["split"], expect=expect, domain=dom)
        out.append((t, row))
    return out


def main() -> None:
    """``python bench/rootcause_figures.py SERVICE_DUMP XQUAD_DUMP [--conversations TUNE HELD]
    [--into FILE]``: the pooled leave-one-domain-out choice of the root-cause weights from the
    benches' dumps of every trace (``service.py --no-fit --dump F --dump-split all``,
    ``e2e.py --split all --dump F``, ``conversations.py --split tune --dump F`` and
    ``--split heldout``: its three sources are three more domains); prints and writes
    aggregates only."""
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("service")
    ap.add_argument("xquad")
    ap.add_argument("--conversations", nargs="*", default=[], help="Conversations dumps.")
    ap.add_argument(
        "--into", default=None, help="A results file to hold it as root_cause_pooled_lodo."
    )
    ap.add_argument(
        "--close-bands",
        action="store_true",
        help="Choose the close-call bands instead, leave-one-domain-out on the first dump's tune"
        " split (service.py --licence-clean ... --dump F --dump-split all), and show what they"
        " trade on every dump's tune and held-out splits; --into writes it there.",
    )
    ap.add_argument(
        "--service-bench",
        default=None,
        help="With --close-bands: the service bench's dump (Doc2Dial + MEMERAG), traded too.",
    )
    ap.add_argument(
        "--minimax",
        action="store_true",
        help="Choose the margin and the context close-call bands whose worst domain is best"
        " (minimax_choice) over every dump's domains, leave one domain out.",
    )
    args = ap.parse_args()
    if args.close_bands:
        _close_bands_main(args)
        return
    caught = _read_dump(args.service, "service") + _read_dump(args.xquad, "xquad")
    for path in args.conversations:
        caught += _read_dump(path, "conversations")
    minimax = args.minimax
    got = (minimax_choice if minimax else pooled_choice)(caught, lambda t: t.domain)
    print(json.dumps(got, indent=1))
    if args.into:
        with open(args.into, encoding="utf-8") as fh:
            kept = json.load(fh)
        kept["root_cause_minimax_lodo" if minimax else "root_cause_pooled_lodo"] = got
        with open(args.into, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(kept, indent=2, ensure_ascii=False) + "\n")


def _close_bands_main(args: argparse.Namespace) -> None:
    clean = _read_dump(args.service, "service")
    got = close_band_choice(clean, lambda t: t.domain)
    shipped = {k: float(DEFAULT_WEIGHTS[k]) for k in CLOSE_BANDS}
    sets = {"no_band": dict.fromkeys(CLOSE_BANDS, 0.0), "fold_median": got["median"],
            "shipped": shipped}  # fmt: skip
    trade: dict[str, Any] = {}
    for name, path, bench in [
        ("licence_clean", args.service, "service"),
        *((("service", args.service_bench, "service"),) if args.service_bench else ()),
        ("xquad", args.xquad, "xquad"),
        *((f"conversations_{i}", p, "conversations") for i, p in enumerate(args.conversations)),
    ]:
        rows = _read_dump(path, bench)
        trade[name] = {s: band_trade(rows, sets, s) for s in ("tune", "heldout")}
    got = {
        "benchmark": "close_bands",
        "how": "service.py --licence-clean --no-fit --dump F --dump-split all; e2e.py --split all"
        " --demo-queries 0 --dump F; conversations.py --split tune|heldout --no-write --dump F;"
        " service.py --no-fit --results-only --dump F --dump-split all; rootcause_figures.py"
        " LICENCE_CLEAN XQUAD --conversations TUNE HELD --service-bench F --close-bands",
        "shipped": shipped,
        **got,
        "trade": trade,
    }
    print(json.dumps(got, indent=1))
    if args.into:  # a results file of its own
        with open(args.into, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(got, indent=2, ensure_ascii=False) + "\n")


__all__ = [
    "close_band_choice",
    "leave_one_domain_out",
    "minimax_choice",
    "pooled_choice",
    "recombined",
    "rule_alone",
    "stated",
]


if __name__ == "__main__":
    main()
