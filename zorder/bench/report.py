"""The text tables of ``zorder bench``'s reports (``timing.run_bench``, ``matrix.run_matrix``)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from zorder.bench.timing import BASELINE, REFERENCE


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1,
                 header_left: bool = False) -> str:
    """A plain-text table with a dashed rule under the header: the first ``left`` columns
    aligned to the left, the others to the right (the header's too, unless
    ``header_left``), two spaces apart."""
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows)]

    def line(cells: Sequence[str], all_left: bool = False) -> str:
        return "  ".join(str(c).ljust(w) if all_left or i < left else str(c).rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths)))

    return "\n".join([line(header, header_left), line(["-" * w for w in widths])]
                     + [line(r) for r in rows])


def ns_cell(ns: Optional[float], ratio: Optional[float] = None, suffix: str = "x") -> str:
    """A time in ns as the tables print it, with a ratio in brackets if given ("-": none)."""
    if ns is None:
        return "-"
    text = f"{ns:.1f}" if ns < 1000 else f"{ns:,.0f}"
    if ratio is not None:
        text += f" ({ratio:.0f}{suffix})" if ratio >= 10 else f" ({ratio:.1f}{suffix})"
    return text


def format_report(report: Dict[str, Any]) -> str:
    """The human-readable tables for a run_bench report."""
    cpu = report["cpu"]
    names = report["backends"]
    out = [
        f"zorder {report['zorder_version']} bench, {report['date']}",
        f"CPU: {cpu['brand']} ({cpu['vendor']}, family {cpu['family']}, model {cpu['model']}), "
        f"{cpu['logical_cpus']} logical CPUs"
        + (f" (load average {cpu['load_average']} at the start)"
           if cpu.get("load_average") is not None else "")
        + f"; Python {report['python']}, numpy {report['numpy']}",
        f"backends: {', '.join(names)}; auto picks {report['auto']} ({report['auto_reason']})",
        "",
    ]
    ref_note = (f"; {REFERENCE}: {report['bitloop_calls']:,} calls sampled"
                if REFERENCE in names else "")
    out.append(f"times: best of {report['repeat']} runs, {report.get('clock', 'wall time')} "
               f"(threads=T: wall time)")
    out.append(f"per-row: interleave_bits(columns, size, out=buf), ns per call, best of "
               f"{report['repeat']} x {report['calls']:,} calls{ref_note}; "
               f"(speedup over {REFERENCE}); memcpy = b\"\".join(columns)")
    header = ["shape"] + names + [BASELINE]

    def timing_table(kind: str) -> str:
        rows = []
        for r in report["results"]:
            ns, sp = r[kind]["ns"], r[kind]["speedup_vs_bitloop"]
            rows.append([r["shape"]] + [ns_cell(ns.get(n), sp.get(n)) for n in names]
                        + [ns_cell(ns.get(BASELINE))])
        return format_table(header, rows)

    out += [timing_table("per_row"), ""]
    ref_note = (f"; {REFERENCE}: {report['bitloop_rows']:,} rows sampled"
                if REFERENCE in names else "")
    out.append(f"batch: interleave_rows(block, size, out), ns per row, best of {report['repeat']} "
               f"x {report['rows']:,} rows{ref_note}; (speedup over {REFERENCE}); "
               f"memcpy = numpy copy of the input bytes")
    out += [timing_table("batch"), ""]
    out.append("batch time / memcpy time (1.0 = the speed of a copy)")
    rows = []
    for r in report["results"]:
        xm = r["batch"]["x_memcpy"]
        rows.append([r["shape"]] + [f"{xm[n]:.2f}" if xm.get(n) else "-" for n in names])
    out += [format_table(["shape"] + names, rows), ""]
    threads = report["threads"]
    if len(threads) > 1:
        fast = [n for n in names if n != REFERENCE]
        out.append(f"batch with threads=T: ns per row in wall time (speedup over 1 thread); "
                   f"{cpu['logical_cpus']} logical CPUs")
        header = ["shape"] + [f"{n} T={t}" for n in fast for t in threads]
        rows = []
        for r in report["results"]:
            row = [r["shape"]]
            for n in fast:
                scale = r["threads"].get(n, {})
                for t in threads:
                    v = scale.get(str(t))
                    row.append(ns_cell(v, scale["1"] / v if v and t > 1 else None))
            rows.append(row)
        out += [format_table(header, rows), ""]
    return "\n".join(out).rstrip() + "\n"


def format_matrix(matrix: Dict[str, Any]) -> str:
    """The matrix as text tables: ns/row (x copy), and auto against the best backend."""
    names = matrix["backends"]
    header = ["shape", "class"] + names + ["memcpy", "auto/best"]
    rows = []
    for r in matrix["shapes"]:
        cells = [r["shape"], r["class"]]
        for n in names:
            cells.append(f"{r['ns'][n]:,.1f} (x{r['x_memcpy'][n]:.1f})")
        cells += [f"{r['ns']['memcpy']:,.1f}", f"{r['auto_vs_best']:.2f}"]
        rows.append(cells)
    out = [f"shape matrix: interleave_rows(columns, size, out), ns per row (x copy), best of "
           f"rounds x {matrix['rows']:,} rows; auto/best = auto's time over the fastest "
           f"single backend's", format_table(header, rows, left=2, header_left=True), ""]
    hrows = [[str(h["columns"]), f"{h['ns']['hilbert_rows']:,.1f} (x{h['x_memcpy']['hilbert_rows']:.1f})",
              f"{h['ns']['interleave_rows']:,.1f} (x{h['x_memcpy']['interleave_rows']:.1f})",
              f"{h['ns']['memcpy']:,.1f}"] for h in matrix["hilbert"]]
    out += ["Hilbert: hilbert_rows(columns, 64, out) on columns of 8 bytes, ns per row (x copy)",
            format_table(["columns", "hilbert_rows", "interleave_rows", "memcpy"], hrows, left=2,
                         header_left=True)]
    return "\n".join(out) + "\n"
