"""The one plotting helper: matplotlib, imported only when a command draws, and the
figures the commands draw (needs the ``plot`` extra)."""

from __future__ import annotations

import os
from typing import Any, Dict, Sequence, Tuple


def require_matplotlib(what: str) -> None:
    """ImportError naming the extra if matplotlib is missing (the commands' one error
    line, exit status 2), so that a command can stop before any work."""
    try:
        import matplotlib  # noqa: F401  (only whether it imports)
    except ImportError:
        raise ImportError(
            f"{what} needs matplotlib, which is not installed (pip install 'zorder[plot]')"
        ) from None


def plot_format(path: str, what: str) -> str:
    """The file format matplotlib writes ``path`` in (its extension; png without one), or
    ValueError naming ``what`` if it writes no such format. Needs matplotlib."""
    from matplotlib.backend_bases import FigureCanvasBase

    ext = os.path.splitext(path)[1][1:].lower()
    formats = FigureCanvasBase.get_supported_filetypes()
    if ext and ext not in formats:
        raise ValueError(f"{what} {path!r}: matplotlib cannot write .{ext} files (it writes "
                         f"{', '.join(sorted(formats))})")
    return ext or "png"


def check_plot_output(path: str, what: str, apart_from: Sequence[Tuple[str, str]],
                      overwrite: bool) -> None:
    """Everything about a command's ``--plot FILE`` that can be refused before its work:
    matplotlib missing, a format it cannot write, and the output checks of
    ``zorder.parquet.safety.check_side_output`` (never the input or the main output under
    any name; an existing file only with ``overwrite``)."""
    from zorder.parquet.safety import check_side_output

    require_matplotlib(what)
    check_side_output(path, what, apart_from, overwrite)
    plot_format(path, what)


def save_figure(fig: Any, path: str, dpi: int) -> None:
    """Write ``fig`` to ``path`` whole or not at all (beside it first, then renamed over
    it, as the commands write their data)."""
    from zorder.parquet.safety import atomic_file

    with atomic_file(path) as tmp:
        fig.savefig(tmp, dpi=dpi, format=plot_format(path, "plot"))


def pyplot() -> Any:
    """matplotlib.pyplot on the file-only Agg backend (no display needed)."""
    require_matplotlib("plotting")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_bench(report: Dict[str, Any], path: str) -> None:
    """A bar chart of ns/row per shape and backend (log scale), per-row and batch."""
    from zorder.bench import BASELINE

    plt = pyplot()
    names = report["backends"] + [BASELINE]
    shapes = [r["shape"] for r in report["results"]]
    fig, axes = plt.subplots(2, 1, figsize=(max(8, 1.4 * len(shapes) + 3), 8))
    width = 0.8 / len(names)
    for ax, path_name, title in ((axes[0], "per_row", "per-row: interleave_bits, ns per call"),
                                 (axes[1], "batch", "batch: interleave_rows, ns per row")):
        for i, name in enumerate(names):
            values = [r[path_name]["ns"].get(name, float("nan")) for r in report["results"]]
            label = 'b"".join' if (name == BASELINE and path_name == "per_row") else name
            ax.bar([x + i * width for x in range(len(shapes))], values, width, label=label)
        ax.set_yscale("log")
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(shapes))])
        ax.set_xticklabels(shapes)
        ax.set_title(title)
        ax.set_ylabel("ns (log scale)")
        ax.legend(fontsize="small", ncol=len(names))
    cpu = report["cpu"]
    fig.suptitle(f"zorder {report['zorder_version']}: {cpu['brand']}, {report['date']}")
    fig.tight_layout()
    save_figure(fig, path, 120)
    plt.close(fig)


def plot_after(report: Dict[str, Any], path: str, written: str) -> None:
    """A command's ``--plot``: the skipping report drawn to ``path`` once its output,
    ``written``, is complete; an error then says that the output was written."""
    try:
        plot_skipping(report, path)
    except OSError as exc:
        raise OSError(f"{written} was written, but not the plot: {exc}") from None
    print(f"plot: {path}")


def plot_skipping(report: Dict[str, Any], path: str) -> None:
    """Bar chart of a skipping report (``zorder.parquet.skipping``): before, and each
    layout after (one, or several side by side: curves, encodings)."""
    plt = pyplot()
    names = list(report["columns"])
    sides = list(report["columns"][names[0]]) if names else ["before", "after"]
    x = list(range(len(names)))
    width = 0.8 / len(sides)
    colors = ["#999999", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"]
    # Files only where some layout has more than one (one file is never skipped).
    units = [("row_groups_skipped", "row groups")]
    if any(report["columns"][n][side]["files"] > 1 for n in names for side in sides):
        units.insert(0, ("files_skipped", "files"))
    fig, axes = plt.subplots(1, len(units), squeeze=False, sharey=True,
                             figsize=(max(6, (0.8 + 0.6 * len(sides)) * len(names) * len(units) + 3), 4))
    axes = list(axes[0])
    for ax, (unit, title) in zip(axes, units):
        for k, side in enumerate(sides):
            values = [100 * report["columns"][n][side][unit] for n in names]
            offset = (k - (len(sides) - 1) / 2) * width
            bars = ax.bar([i + offset for i in x], values, width, label=side,
                          color=colors[k % len(colors)])
            ax.bar_label(bars, fmt="%.0f%%", fontsize=7)
        ax.set_xticks(x, names)
        ax.set_title(f"{title} skipped")
        ax.set_ylim(0, 100)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel(f"% skipped by a ~{report['fraction']:.0%} range predicate")
    axes[0].legend()
    fig.suptitle("min/max statistics skipping, before and after clustering")
    fig.tight_layout()
    save_figure(fig, path, 100)
    plt.close(fig)
