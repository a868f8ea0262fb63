#!/usr/bin/env python3
"""Developer views of saved ``python -m zorder bench --json`` reports.

    python -m zorder bench --json > before.json     # ... change a kernel, rebuild ...
    python -m zorder bench --json > after.json
    python tools/bench_report.py compare before.json after.json   # after / before, per cell
    python tools/bench_report.py markdown after.json              # tables as in docs/performance.md
    python tools/bench_report.py plot after.json after.png        # the bench's chart, from JSON

The timing and the tables live in zorder.bench, the chart in zorder.cli.plot; this only
reads saved reports, so a comparison never needs both builds installed at once.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List

from zorder.bench import BASELINE, REFERENCE, format_table, ns_cell
from zorder.cli.plot import plot_bench, require_matplotlib


def load(path: str) -> Dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _by_shape(report: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    return {r["shape"]: r for r in report["results"]}


def compare(old: Dict[str, Any], new: Dict[str, Any]) -> str:
    """new ns / old ns for every shape, path and backend both reports have (< 1 = faster)."""
    old_shapes, new_shapes = _by_shape(old), _by_shape(new)
    names = [n for n in new["backends"] if n in old["backends"]] + [BASELINE]
    lines = [f"new / old time (below 1.00 is faster); old {old['date']}, new {new['date']}"]
    for path in ("per_row", "batch"):
        rows: List[List[str]] = []
        for shape, result in new_shapes.items():
            if shape not in old_shapes:
                continue
            before, after = old_shapes[shape][path]["ns"], result[path]["ns"]
            rows.append([shape] + [
                f"{after[n] / before[n]:.2f}" if n in before and n in after else "-"
                for n in names
            ])
        lines += ["", path.replace("_", "-"), format_table(["shape"] + names, rows)]
    return "\n".join(lines) + "\n"


def markdown(report: Dict[str, Any]) -> str:
    """Markdown tables of a report: batch and per-row ns, speedup over bitloop, x memcpy."""
    names = report["backends"]
    cpu = report["cpu"]
    out = [
        f"Measured {report['date']} on {cpu['brand']} ({cpu['vendor']} family {cpu['family']} "
        f"model {cpu['model']}, {cpu['logical_cpus']} logical CPUs"
        + (f", load average {cpu['load_average']}" if cpu.get("load_average") is not None else "")
        + f"), Python {report['python']}, numpy {report['numpy']}; `auto` picks "
        f"`{report['auto']}`.",
        "",
    ]
    for path, title, floor in (
        ("batch", f"Batch, `interleave_rows` on {report['rows']:,} rows: ns per row "
                  f"(speedup over bitloop; time / memcpy)", "numpy copy"),
        ("per_row", "Per row, `interleave_bits` with a reused `out`: ns per call "
                    "(speedup over bitloop)", 'b"".join'),
    ):
        out += [title, ""]
        header = ["shape"] + names + [f"memcpy ({floor})"]
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "---|" * len(header))
        for r in report["results"]:
            p = r[path]
            cells = [r["shape"]]
            for n in names:
                ns = p["ns"].get(n)
                if ns is None:
                    cells.append("-")
                    continue
                cell = ns_cell(ns)
                extra = []
                if n in p["speedup_vs_bitloop"]:
                    extra.append(f"{p['speedup_vs_bitloop'][n]:.0f}x")
                if path == "batch" and n in p["x_memcpy"]:
                    extra.append(f"{p['x_memcpy'][n]:.1f}")
                cells.append(cell + (f" ({'; '.join(extra)})" if extra else ""))
            cells.append(ns_cell(p["ns"].get(BASELINE)))
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    if len(report["threads"]) > 1:
        t = report["threads"][-1]
        out += [f"Batch with `threads={t}`: ns per row (speedup over one thread)", ""]
        fast = [n for n in names if n != REFERENCE]
        out.append("| shape | " + " | ".join(fast) + " |")
        out.append("|" + "---|" * (len(fast) + 1))
        for r in report["results"]:
            cells = [r["shape"]]
            for n in fast:
                scale = r["threads"].get(n, {})
                v = scale.get(str(t))
                cells.append(ns_cell(v, scale["1"] / v if v else None))
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compare", help="new / old time for every shape and backend")
    c.add_argument("old")
    c.add_argument("new")
    m = sub.add_parser("markdown", help="Markdown tables, as in docs/performance.md")
    m.add_argument("report")
    p = sub.add_parser("plot", help="the bench's bar chart from a saved report")
    p.add_argument("report")
    p.add_argument("png")
    args = parser.parse_args(argv)
    if args.command == "compare":
        sys.stdout.write(compare(load(args.old), load(args.new)))
    elif args.command == "markdown":
        sys.stdout.write(markdown(load(args.report)))
    else:
        require_matplotlib("tools/bench_report.py --png")
        plot_bench(load(args.report), args.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
