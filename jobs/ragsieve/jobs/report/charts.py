"""The report's charts: matplotlib figures rendered to inline SVG strings.

Why matplotlib: it is well kept, permissively licensed, draws server-side with no JavaScript,
and its SVG backend writes self-contained vector markup, so the page needs no CDN, script or
font to open (text stays ``<text>`` and the browser's own sans-serif draws it). A JS charting
library would have to be inlined into every file (plotly.js alone is ~3.5 MB against the 5 MB
goal). Figures are built with ``matplotlib.figure.Figure`` (no pyplot global state), so the job's
threads can render without a display.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from cycler import cycler
from matplotlib import dates as mdates
from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ragsieve.jobs.history.runs import Rate

PALETTE = ("#d1495b", "#00798c", "#edae49", "#66a182", "#2e4057", "#8d96a3")
STYLE: Any = {  # rc keys are checked by matplotlib at run time
    # every label comes from traces (cells, root causes, categories): "$x$" is text, never
    # mathtext (an unbalanced "$\\frac{$" would raise and lose the whole report)
    "text.parse_math": False,
    "svg.fonttype": "none",
    "font.family": "sans-serif",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.prop_cycle": cycler(color=PALETTE),
}
_HEADER = re.compile(r"^.*?(?=<svg)", re.S)


def to_svg(fig: Figure, salt: str) -> str:
    """The figure as an inline ``<svg>`` element (no XML prolog), ids salted per chart."""
    buf = io.StringIO()
    with rc_context({**STYLE, "svg.hashsalt": salt}):
        fig.savefig(buf, format="svg")
    return _HEADER.sub("", buf.getvalue(), count=1)


def _figure(height: float = 2.8, width: float = 9.5, left_in: float = 0.55) -> Figure:
    """One axes with fixed margins in inches (a layout engine would lay out every draw twice)."""
    with rc_context(STYLE):
        fig = Figure(figsize=(width, height))
        fig.subplots_adjust(
            left=left_in / width, right=1 - 0.6 / width, bottom=0.45 / height, top=1 - 0.3 / height
        )
        fig.add_subplot()
    return fig


def _x(times: Sequence[datetime]) -> Any:
    """Times as matplotlib date numbers."""
    return mdates.date2num(list(times))


def _time_axis(ax: Axes, times: Sequence[datetime]) -> None:
    if not times:
        return
    ax.xaxis_date()
    if min(times) < max(times):  # the runs' span, also where a series has a point only in some
        ax.set_xlim(_x([min(times), max(times)]))
    loc = mdates.AutoDateLocator(minticks=3, maxticks=10)  # 5 finds no interval for ~4.5 minutes
    ax.xaxis.set_major_locator(loc)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(loc))


def _pct_axis(ax: Axes) -> None:
    ax.yaxis.set_major_formatter(lambda v, _pos: f"{100 * v:.0f}%")


def failure_rate(
    times: Sequence[datetime], rate: Sequence[Rate | None], corrected: Sequence[Rate | None]
) -> str:
    """Weighted failure rate per run with its 95% band; the judge-corrected rate when known."""
    with rc_context(STYLE):
        fig = _figure(3.0)
        ax = fig.axes[0]
        pts = [(t, r) for t, r in zip(times, rate, strict=True) if r is not None]
        if pts:
            ts = _x([t for t, _ in pts])
            ax.fill_between(
                ts,
                [r.ci_low for _, r in pts],
                [r.ci_high for _, r in pts],
                color=PALETTE[0],
                alpha=0.18,
                linewidth=0,
                label="95% interval",
            )
            ax.plot(
                ts,
                [r.estimate for _, r in pts],
                color=PALETTE[0],
                lw=1.2,
                marker="o" if len(pts) < 60 else None,
                ms=3,
                label="failure rate (weighted)",
            )
        cor = [(t, r) for t, r in zip(times, corrected, strict=True) if r is not None]
        if cor:
            ax.plot(
                _x([t for t, _ in cor]),
                [r.estimate for _, r in cor],
                color=PALETTE[4],
                lw=1,
                ls="--",
                label="judge-corrected",
            )
        ax.set_ylim(bottom=0)
        _pct_axis(ax)
        _time_axis(ax, times)
        if pts or cor:
            ax.legend(loc="upper left", frameon=False, ncols=3)
        return to_svg(fig, "rate")


def root_causes(times: Sequence[datetime], causes: Mapping[str, Sequence[float]]) -> str:
    """Each root cause's part of the failure rate per run, stacked (they add up to the rate)."""
    with rc_context(STYLE):
        fig = _figure()
        ax = fig.axes[0]
        if causes and times:
            names = list(causes)
            ax.stackplot(
                _x(times),
                *[causes[n] for n in names],
                labels=names,
                alpha=0.85,
                colors=PALETTE[1 : 1 + len(names)],
            )
            ax.legend(loc="upper left", frameon=False, ncols=len(names))
        ax.set_ylim(bottom=0)
        _pct_axis(ax)
        _time_axis(ax, times)
        return to_svg(fig, "causes")


def rates_bar(rates: Mapping[str, Rate], salt: str, *, title: str = "", width: float = 9.5) -> str:
    """Horizontal bars of pooled rates with their 95% intervals as error bars."""
    names = list(rates)
    label_in = 0.2 + 0.075 * max((len(n) for n in names), default=4)
    with rc_context(STYLE):
        fig = _figure(max(1.4, 0.3 * len(names) + 0.9), width, left_in=min(label_in, width / 2))
        ax = fig.axes[0]
        est = [rates[n].estimate for n in names]
        err = [
            [max(0.0, rates[n].estimate - rates[n].ci_low) for n in names],
            [max(0.0, rates[n].ci_high - rates[n].estimate) for n in names],
        ]
        ax.barh(names, est, xerr=err, color=PALETTE[1], alpha=0.8, ecolor="#333", capsize=2)
        ax.invert_yaxis()
        ax.set_xlim(left=0)
        ax.xaxis.set_major_formatter(lambda v, _pos: f"{100 * v:.0f}%")
        if title:
            ax.set_title(title, loc="left", fontsize=9)
        return to_svg(fig, salt)


def cost(times: Sequence[datetime], usd: Sequence[float], errors: Sequence[int]) -> str:
    """Judge spend (USD) per run, with judge errors on a second axis."""
    with rc_context(STYLE):
        fig = _figure(2.4)
        ax = fig.axes[0]
        ax.fill_between(
            _x(times),
            list(usd),
            step="mid",
            color=PALETTE[2],
            alpha=0.6,
            linewidth=0,
            label="USD per run",
        )
        ax.set_ylim(bottom=0)
        ax.set_ylabel("USD")
        ax2 = ax.twinx()
        ax2.plot(_x(times), list(errors), color=PALETTE[0], lw=0.8, label="judge errors")
        ax2.set_ylim(bottom=0)
        ax2.set_ylabel("judge errors")
        ax2.grid(False)
        _time_axis(ax, times)
        return to_svg(fig, "cost")


def agreement(
    times: Sequence[datetime], precision: Sequence[float | None], fomr: Sequence[float | None]
) -> str:
    """The judge's measured precision and false-omission rate over time (from reviews)."""
    with rc_context(STYLE):
        fig = _figure(2.4)
        ax = fig.axes[0]
        for values, label, color in (
            (precision, "precision", PALETTE[3]),
            (fomr, "false-omission rate", PALETTE[0]),
        ):
            pts = [(t, v) for t, v in zip(times, values, strict=True) if v is not None]
            if pts:
                ax.plot(  # a marker on each run: a measure that only the latest run has shows
                    _x([t for t, _ in pts]),
                    [v for _, v in pts],
                    lw=1.2,
                    marker="o",
                    ms=3,
                    color=color,
                    label=label,
                )
        ax.set_ylim(0, 1.02)
        _pct_axis(ax)
        _time_axis(ax, times)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="center left", frameon=False, ncols=2)
        return to_svg(fig, "agreement")


__all__ = ["agreement", "cost", "failure_rate", "rates_bar", "root_causes", "to_svg"]
