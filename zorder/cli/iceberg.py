"""``zorder iceberg rewrite TABLE --columns a,b``: Z-order an Iceberg table in place with
REPLACE snapshots (``zorder.engines.iceberg.rewrite``), then report what readers can
skip before and after."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.parse
from typing import Any, Dict, List, Optional, Tuple

from zorder.cli import FAILURE, INTERRUPTED, TERMINATED, first_line
from zorder.cli.args import (
    add_memory_arguments,
    add_boundaries_argument, add_columns_argument, add_curve_argument, add_encoding_arguments,
    add_iceberg_arguments, add_profile_argument, encoding_arguments, iceberg_options,
    positive_int, profiled, scheduler_arg, SCHEDULER_HELP, size_arg,
    whole_number,
)
from zorder.cli.progress import Progress
from zorder.parquet.safety import Terminated
from zorder.values.stages import REPORT, stage

__all__ = ["add_arguments", "load_catalog", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``iceberg`` command's actions and their options."""
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    _add_rewrite_arguments(actions.add_parser(
        "rewrite", help="cluster the table", description="Z-order (or Hilbert) rewrite of an "
        "Iceberg table, committed as one REPLACE snapshot (one per batch with "
        "--partial-progress). Incremental: only file groups not yet clustered this way, "
        "or selected by the options below, are rewritten."))
    _add_clean_arguments(actions.add_parser(
        "clean", help="delete the files earlier rewrites journaled and left unreferenced",
        description="Delete the data files that earlier rewrites journaled (under the "
        "table's location, zorder-journal/) and that no snapshot of any branch or tag "
        "references: what a SIGKILL, a killed Dask worker or a lost client left. Never a "
        "file zorder did not journal, nor one of a run in progress."))


def _add_clean_arguments(parser: argparse.ArgumentParser) -> None:
    """``iceberg clean``'s options."""
    parser.add_argument("table", metavar="TABLE", help="the table's identifier, e.g. db.events")
    _add_catalog_arguments(parser)
    parser.add_argument("--older-than", default=None, type=float, metavar="SECONDS",
                        help="judge a run over once silent this long (default 3600; a run "
                             "that ended, or whose process on this host is gone, at once)")
    parser.add_argument("--dry-run", action="store_true",
                        help="list the files that would be deleted; delete nothing")


def _add_rewrite_arguments(parser: argparse.ArgumentParser) -> None:
    """``iceberg rewrite``'s options."""
    parser.add_argument("table", metavar="TABLE", help="the table's identifier, e.g. db.events")
    add_columns_argument(parser, "curve columns")
    add_curve_argument(parser)
    parser.add_argument("--where", default=None, metavar="EXPR",
                        help="rewrite only the files that may hold matching rows, e.g. "
                             "\"day >= '2026-01-01'\" (PyIceberg's expression syntax)")
    _add_catalog_arguments(parser)
    parser.add_argument("--target-file-size", default=None, type=size_arg, metavar="SIZE",
                        help="target data file size, e.g. 512MB (default: the table's "
                             "write.target-file-size-bytes, else 512MiB)")
    parser.add_argument("--max-file-group-size", default="100GiB", type=size_arg, metavar="SIZE",
                        help="most input bytes rewritten as one group (default 100GiB, as Iceberg)")
    add_memory_arguments(parser, "one file group", "a larger group is rewritten out of core, "
                         "spilling to --temp-dir", "the system's temporary folder")
    parser.add_argument("--scheduler", default=None, type=scheduler_arg,
                        help="run the file groups (and the ranges of a group past "
                             "--memory-limit) as Dask tasks: " + SCHEDULER_HELP.replace(
                                 "threads (default)", "threads") + " (default: none, one "
                             "group after the other in this process)")
    parser.add_argument("--branch", default="main", metavar="NAME",
                        help="rewrite this branch's head and commit to it; no other branch "
                             "or tag moves (default: main)")
    parser.add_argument("--partial-progress", action="store_true",
                        help="commit the file groups in batches as they are written (Iceberg's "
                             "partial-progress.enabled): a failed group leaves the other "
                             "batches committed")
    parser.add_argument("--max-commits", default=None, type=positive_int, metavar="N",
                        help="most commits with --partial-progress (default 10, Iceberg's "
                             "partial-progress.max-commits)")
    add_selection_arguments(parser)
    parser.add_argument("--case-sensitive", action="store_true",
                        help="resolve column names exactly (default: case-insensitively, as Spark)")
    add_iceberg_arguments(parser, timestamp_applies=False)
    add_encoding_arguments(parser)
    add_boundaries_argument(parser, "the --report-json of an earlier rewrite")
    parser.add_argument("--report-json", default=None, metavar="FILE",
                        help="write the rewrite's report (file groups, and with --encoding "
                             "rank the rank boundaries, for --boundaries next time) as JSON")
    parser.add_argument("--dry-run", action="store_true",
                        help="show per file group whether it would be rewritten and why; "
                             "write and commit nothing")
    parser.add_argument("--no-report", action="store_true", help="skip the skipping report")
    parser.add_argument("--quiet", action="store_true", help="no progress line")
    add_profile_argument(parser)


def add_selection_arguments(parser: argparse.ArgumentParser) -> None:
    """Which file groups ``iceberg rewrite`` rewrites: Iceberg's options, by their names."""
    pick = parser.add_argument_group(
        "which partitions to rewrite (by default those holding a file not clustered by "
        "these columns and options; and as Iceberg's rewrite_data_files picks by size)")
    pick.add_argument("--min-file-size", default=None, type=size_arg, metavar="SIZE",
                      help="files below this size are candidates (default 75%% of the target)")
    pick.add_argument("--max-file-size", default=None, type=size_arg, metavar="SIZE",
                      help="files above this size are candidates (default 180%% of the target)")
    pick.add_argument("--min-input-files", default=5, type=positive_int, metavar="N",
                      help="rewrite a partition with at least N candidate files (default 5)")
    pick.add_argument("--rewrite-all", action="store_true",
                      help="rewrite every partition, clustered or not")
    pick.add_argument("--delete-file-threshold", default=None, type=whole_number, metavar="N",
                      help="rewrite a partition with a file that has N or more delete files "
                           "(default: off)")
    pick.add_argument("--max-files-to-rewrite", default=None, type=positive_int, metavar="N",
                      help="rewrite at most N files (default: no cap)")
    pick.add_argument("--min-overlap-depth", default=None, type=positive_int, metavar="N",
                      help="also rewrite a partition where N or more files' curve ranges "
                           "cover one curve value (Iceberg PR 17504; default: off)")


def selection_arguments(args: argparse.Namespace) -> Dict[str, Any]:
    """The selection flags as ``rewrite``'s keywords."""
    return {"min_file_size": args.min_file_size, "max_file_size": args.max_file_size,
            "min_input_files": args.min_input_files, "rewrite_all": args.rewrite_all,
            "delete_file_threshold": args.delete_file_threshold,
            "max_files_to_rewrite": args.max_files_to_rewrite,
            "min_overlap_depth": args.min_overlap_depth}


def _add_catalog_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags that name the catalog."""
    where = parser.add_argument_group("catalog (as PyIceberg loads it: ~/.pyiceberg.yaml, "
                                      "PYICEBERG_CATALOG__* variables, or these flags)")
    where.add_argument("--catalog", default=None, metavar="NAME",
                       help="the catalog's name in the configuration (default: 'default')")
    where.add_argument("--uri", default=None, help="catalog URI, e.g. sqlite:///catalog.db or "
                       "http://rest:8181")
    where.add_argument("--warehouse", default=None, help="warehouse location, e.g. file:///wh")
    where.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                       help="another catalog property (repeatable)")


def load_catalog(args: argparse.Namespace) -> Any:
    """The catalog the flags name, through ``pyiceberg.catalog.load_catalog``: by name
    from the configuration, with ``--uri``/``--warehouse``/``--property`` on top."""
    from pyiceberg.catalog import load_catalog as pyiceberg_load_catalog

    properties: Dict[str, str] = {}
    for item in args.property:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--property must be KEY=VALUE, got {item!r}")
        properties[key] = value
    if args.uri is not None:
        properties["uri"] = args.uri
        if args.uri.startswith(("sqlite:", "postgresql:", "mysql:")):
            properties.setdefault("type", "sql")
    if args.warehouse is not None:
        properties["warehouse"] = args.warehouse
    check_sqlite_database(properties.get("uri"))
    return pyiceberg_load_catalog(args.catalog or "default", **properties)


def check_sqlite_database(uri: Any) -> None:
    """Refuse a SQLite catalog URI whose database file does not exist: SQLite would create
    it, and PyIceberg an empty catalog in it, where no table can be."""
    files = sqlite_files(uri)
    if files and not os.path.exists(files[0]):
        raise ValueError(f"--uri {uri}: there is no SQLite database {files[0]!r} (a "
                         f"misspelled path? it was not created)")


def check_table_name(catalog: Any, name: str) -> None:
    """Refuse a table name without a namespace, naming the catalog's namespaces."""
    if "." in name.strip("."):
        return
    try:
        held = ", ".join(".".join(n) for n in catalog.list_namespaces())
    except Exception:  # noqa: BLE001 - only a hint: the catalog says what it says later
        held = ""
    raise ValueError(f"table {name!r} has no namespace: name it NAMESPACE.TABLE, e.g. "
                     f"db.{name}" + (f" (namespaces in catalog {catalog.name!r}: {held})"
                                     if held else ""))


def catalogs_in_database(catalog: Any) -> List[str]:
    """The catalog names a SQL catalog's database holds tables for ([] for another kind
    of catalog, or a database that cannot say)."""
    engine = getattr(catalog, "engine", None)
    if engine is None:
        return []
    try:
        from sqlalchemy import text

        with engine.connect() as connection:
            rows = connection.execute(text("SELECT DISTINCT catalog_name FROM iceberg_tables"))
            return sorted(str(r[0]) for r in rows)
    except Exception:  # noqa: BLE001 - only a hint
        return []


def no_table(catalog: Any, name: str) -> str:
    """The one line for a table the catalog does not have: if the catalog's database holds
    tables of other catalog names only, it names them (a SQL catalog keeps the name)."""
    message = f"no table {name!r} in catalog {catalog.name!r}"
    held = catalogs_in_database(catalog)
    if held and catalog.name not in held:
        uri = catalog.properties.get("uri", "")
        return (f"{message}: its database {uri} holds tables of catalog "
                f"{', '.join(map(repr, held))} only; name it with --catalog {held[0]}")
    return message


#: The rewrite's keywords that its messages name, as the shell's flags.
_FLAGS = {"row_filter": "--where", "target_file_size": "--target-file-size",
          "max_file_group_size": "--max-file-group-size", "boundaries": "--boundaries",
          "rank_bits": "--rank-bits", "memory_limit": "--memory-limit",
          "temp_dir": "--temp-dir"}


def shell_flags(text: str) -> str:
    """A rewrite's message with its keywords as flags (``row_filter:`` -> ``--where:``);
    a keyword given with its flag (``target_file_size / --target-file-size``) once."""
    for keyword, flag in _FLAGS.items():
        text = text.replace(f"{keyword} / {flag}", flag).replace(f"{keyword}=True ({flag})", flag)
        text = re.sub(rf"(?<![\w-]){keyword}=(\S+) \({flag}\)", rf"{flag} \1", text)
        text = re.sub(rf"(?<![\w-]){keyword}(?![\w-])", flag, text)
    return text


#: Iceberg's words (which the library keeps) for a curve column the table lacks.
_MISSING_COLUMN = re.compile(
    r"Cannot find column '(.*)' in table schema \(case sensitive = (true|false)\): ")


def missing_column(text: str, table: Any) -> str:
    """Iceberg's "Cannot find column 'x' in table schema (...): struct<...>" as a shell
    user reads it: the flag, the name, and the table's columns instead of its struct."""
    found = _MISSING_COLUMN.match(text)
    if found is None:
        return text
    exactly = " (--case-sensitive)" if found.group(2) == "true" else ""
    return (f"--columns: the table has no column {found.group(1)!r}{exactly}; its columns "
            f"are {', '.join(table.schema().column_names)}")


def local_path(uri: Any) -> Optional[str]:
    """The local file-system path of a ``file:`` URI or a plain path, read as PyIceberg's
    file IO reads it (``PyArrowFileIO.parse_location``: the host and path as written, no
    percent-decoding); None for any other scheme (an object store: no local file there can
    be overwritten)."""
    if not isinstance(uri, str) or not uri:
        return None
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme == "file":
        return os.path.abspath(parsed.netloc + parsed.path)
    if parsed.scheme == "" or (len(parsed.scheme) == 1 and os.name == "nt"):
        return os.path.abspath(uri)
    return None


def sqlite_files(uri: Any) -> List[str]:
    """The files of a SQLite catalog's database (with its journal, WAL and shared-memory
    files), from its SQLAlchemy URI (``sqlite:///``, ``sqlite+pysqlite:///``...); none for
    another database or an in-memory one."""
    if not isinstance(uri, str) or not uri.startswith("sqlite"):
        return []
    try:
        from sqlalchemy.engine import make_url
        url = make_url(uri)
    except Exception:  # noqa: BLE001 - no SQLAlchemy, or not a URL it reads: no SQL catalog
        return []
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return []
    database = os.path.abspath(url.database)
    return [database] + [database + suffix for suffix in ("-journal", "-wal", "-shm")]


def table_places(catalog: Any, table: Any) -> List[Tuple[str, str]]:
    """(local path, what) of every place a report must not be written: the table's
    location, its current metadata file, the catalog's warehouse and, for a SQLite catalog,
    its database files."""
    metadata = local_path(getattr(table, "metadata_location", None))
    places = [(local_path(table.location()), "the table's location"),
              # (the folder: write.metadata.path can put it outside the location)
              (metadata and os.path.dirname(metadata), "the table's metadata folder"),
              (local_path(catalog.properties.get("warehouse")), "the catalog's warehouse")]
    places += [(path, "the catalog's database")
               for path in sqlite_files(catalog.properties.get("uri"))]
    return [(path, what) for path, what in places if path]


def check_report_is_not_the_table(path: str, catalog: Any, table: Any) -> None:
    """Refuse a --report-json that is, or is inside, the table's or the catalog's places,
    or (when it exists) any file some snapshot of the table references, wherever it lies
    (files added from elsewhere): the report replaces what it names."""
    from zorder.parquet.safety import check_side_output, overlap

    places = table_places(catalog, table)
    check_side_output(path, "--report-json", places, overwrite=True)
    if not os.path.lexists(path) or not _data_or_manifest(path):
        # A new name cannot be a file of the table; nor can a file that is not Parquet,
        # ORC or Avro outside its metadata folder (a report run again, the usual case,
        # does not read every manifest of every snapshot).
        return
    # Files inside the places were covered above, under any name; the others one by one.
    prefixes = tuple(os.path.abspath(p).rstrip(os.sep) + os.sep for p, _ in places)
    from zorder.engines.iceberg import referenced_files

    for uri in referenced_files(table):
        local = local_path(uri)
        if local and not os.path.abspath(local).startswith(prefixes) \
                and overlap(path, local) is not None:
            raise ValueError(f"--report-json {path!r} is a file of table {table.name()!r} "
                             f"({uri}); write it somewhere else")


def _data_or_manifest(path: str) -> bool:
    """Whether ``path`` starts as a Parquet, ORC or Avro file does (or cannot be read, so
    may be one)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError:
        return True
    return head == b"PAR1" or head[:3] == b"ORC" or head == b"Obj\x01"


def _cannot(what: str, exc: Exception) -> int:
    """One line for a catalog's own error (its class and first line), exit status 1."""
    print(f"error: cannot {what} ({type(exc).__name__}: {first_line(exc)})", file=sys.stderr)
    return 1


def _open_table(args: argparse.Namespace) -> Any:
    """(catalog, table) the flags name, or the exit status of a catalog's own error."""
    from pyiceberg.exceptions import NoSuchTableError

    try:
        catalog = load_catalog(args)
    except (ValueError, TypeError, ImportError):
        raise
    except Exception as exc:   # a database driver's or HTTP client's own error
        return _cannot("open the catalog", exc)
    check_table_name(catalog, args.table)
    try:
        table = catalog.load_table(args.table)
    except NoSuchTableError:
        raise ValueError(no_table(catalog, args.table)) from None
    except (ValueError, TypeError, ImportError):
        raise
    except Exception as exc:
        return _cannot(f"load table {args.table!r}", exc)
    return catalog, table


def _clean(args: argparse.Namespace) -> int:
    """``zorder iceberg clean TABLE [--dry-run] [--older-than SECONDS]``."""
    from zorder.engines.iceberg import clean

    if args.older_than is not None and not args.older_than >= 0:
        raise ValueError(f"--older-than must be a number of seconds >= 0, not {args.older_than}")
    opened = _open_table(args)
    if isinstance(opened, int):
        return opened
    _, table = opened
    result = clean(table, dry_run=args.dry_run, older_than=args.older_than)
    out = sys.stdout
    verb = "would delete" if args.dry_run else "deleted"
    for path in result.deleted:
        print(f"{verb} {path}", file=out)
    if result.spill_files:
        print(f"{verb} {len(result.spill_files)} spill file(s) of out-of-core groups",
              file=out)
    print(f"{'dry run: ' if args.dry_run else ''}{verb} {len(result.deleted)} unreferenced "
          f"file(s) and {result.entries} journal entr{'y' if result.entries == 1 else 'ies'} "
          f"of {len(result.runs)} ended run(s); {len(result.referenced)} journaled file(s) "
          f"are referenced and kept; {len(result.live_runs)} run(s) in progress left alone",
          file=out)
    if result.left:
        print(f"error: {len(result.left)} file(s) could not be deleted and stay journaled: "
              f"{', '.join(result.left)}", file=sys.stderr)
        return FAILURE
    return 0


#: What ``--profile`` cannot see of ``zorder iceberg rewrite``.
_UNSEEN = ("planning, manifests, the size estimates of the file cuts, waiting on other "
           "threads; with --scheduler processes or local:N, all the tasks' work")


def run(args: argparse.Namespace) -> int:
    """Run ``zorder iceberg rewrite`` (or ``clean``) with parsed ``args``; returns the exit
    status."""
    with profiled(args, "zorder iceberg rewrite --profile", _UNSEEN):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from zorder.engines.iceberg import IcebergRewriteError, _require_pyiceberg, rewrite

    _require_pyiceberg()
    if args.action == "clean":
        return _clean(args)
    if args.timestamp is not None:
        raise ValueError("--timestamp does not apply: the Iceberg schema says which columns are "
                         "timestamp (microseconds) and which timestamptz (seconds)")
    options = iceberg_options(args)
    if args.report_json:
        from zorder.parquet.safety import check_side_output

        # before the commit, not after it (an earlier report is replaced: that is its use)
        check_side_output(args.report_json, "--report-json", (), overwrite=True)
    if args.max_commits is not None and not args.partial_progress:
        raise ValueError("--max-commits applies only with --partial-progress")
    encoding = encoding_arguments(args)
    if args.partial_progress:
        encoding["partial_progress"] = True
        if args.max_commits is not None:
            encoding["max_commits"] = args.max_commits
    if args.branch != "main":
        encoding["branch"] = args.branch
    opened = _open_table(args)
    if isinstance(opened, int):
        return opened
    catalog, table = opened
    if args.report_json:
        check_report_is_not_the_table(args.report_json, catalog, table)
    bar = Progress("zorder iceberg", enabled=not args.quiet)

    def progress(done: int, total: int, entry: Dict[str, Any]) -> None:
        if "stage" in entry:   # (a step of a group written out of core)
            bar.update(f"{entry['partition'] or 'unpartitioned'}: {entry['stage']}",
                       entry["done"], entry["total"], entry["unit"])
            return
        bar.update(f"file groups (last: {entry['partition'] or 'unpartitioned'})", done, total,
                   "groups", force=True)

    # (main() runs the whole command under interrupts_as_exceptions, the report after the
    # commit included: a `kill` there ends it with its one line too)
    try:
        result = rewrite(table, args.columns, curve=args.curve,
                         target_file_size=args.target_file_size, row_filter=args.where,
                         options=options, dry_run=args.dry_run,
                         case_sensitive=args.case_sensitive,
                         max_file_group_size=args.max_file_group_size, progress=progress,
                         memory_limit=args.memory_limit, temp_dir=args.temp_dir,
                         scheduler=args.scheduler, **encoding, **selection_arguments(args))
    except (ValueError, TypeError) as exc:
        raise type(exc)(shell_flags(missing_column(str(exc), table))) from None
    except IcebergRewriteError as exc:
        bar.close()
        print(f"error: {exc}", file=sys.stderr)
        # (an interrupt during the commit, whose outcome is then unknown: its status)
        return (INTERRUPTED if isinstance(exc.__cause__, KeyboardInterrupt)
                else TERMINATED if isinstance(exc.__cause__, Terminated) else FAILURE)
    finally:
        bar.close()
    try:
        return _after_the_rewrite(args, table, result)
    except (KeyboardInterrupt, Terminated) as exc:
        if result.snapshot_id is None:
            raise   # (nothing was committed: "the output was left as it was" is true)
        stopped = ("terminated (SIGTERM)" if isinstance(exc, Terminated)
                   else "interrupted")
        print(f"error: {stopped} after the rewrite was committed as snapshot "
              f"{result.snapshot_id}: the table is rewritten, only the report was cut "
              f"short", file=sys.stderr)
        return TERMINATED if isinstance(exc, Terminated) else INTERRUPTED


def nothing_to_rewrite(report: Dict[str, Any]) -> str:
    """The one line of a run that selected nothing, saying why."""
    selection = report.get("selection") or []
    if not selection:
        return "nothing to rewrite: no data files match"
    return (f"nothing to rewrite: the {len(selection)} file groups planned are clustered by "
            f"{report['clustering']} and none is picked by size, deletes or overlap; nothing "
            f"was committed (--rewrite-all rewrites them anyway, --dry-run says why per "
            f"partition)")


def _after_the_rewrite(args: argparse.Namespace, table: Any, result: Any) -> int:
    """The report file and the lines printed after ``rewrite`` returned."""
    from zorder.engines.iceberg import skipping
    from zorder.parquet.skipping import format_report

    groups = result.report["groups"]
    out = sys.stdout
    for name in result.report.get("dropped_columns") or ():
        print(f"note: {name} is an identity-partition column, constant in each partition: "
              f"dropped from --columns (as Iceberg's rewrite drops it)", file=out)
    if args.report_json:
        from zorder.parquet.safety import atomic_file

        try:
            with atomic_file(args.report_json) as tmp, open(tmp, "w", encoding="utf-8") as fh:
                json.dump({**result.report, "snapshot_id": result.snapshot_id,
                           "previous_snapshot_id": result.previous_snapshot_id}, fh, indent=1)
        except OSError as exc:
            done = ("nothing was committed (dry run)" if args.dry_run
                    else "nothing was committed" if result.snapshot_id is None
                    else f"the rewrite was committed as snapshot {result.snapshot_id}")
            print(f"error: {done}, but --report-json {args.report_json!r} could not be "
                  f"written: {exc}", file=sys.stderr)
            return 1
    if args.dry_run:
        print(f"dry run: would rewrite {result.rewritten_files} data files "
              f"({result.rewritten_bytes} bytes) in {len(groups)} file groups on "
              f"{', '.join(result.report['columns'])}", file=out)
        for g in result.report.get("selection", []):
            print(f"  {g['partition'] or '(unpartitioned)'}: "
                  f"{'selected' if g['selected'] else 'skipped'}, {g['reason']}", file=out)
        return 0
    if result.snapshot_id is None:
        print(nothing_to_rewrite(result.report), file=out)
        return 0
    commits = result.report.get("commits")
    failed = result.report.get("failed_groups") or []
    on = "" if args.branch == "main" else f" on branch {args.branch}"
    if commits is None:
        print(f"committed snapshot {result.snapshot_id} (replace){on}: {result.rewritten_files} "
              f"files ({result.rewritten_bytes} bytes) rewritten as {result.added_files} in "
              f"{len(groups)} file groups, {result.report['seconds']:.1f} s", file=out)
    else:
        print(f"committed {len(commits)} snapshots (replace){on}: {result.rewritten_files} "
              f"files ({result.rewritten_bytes} bytes) rewritten as {result.added_files}, "
              f"{result.report['seconds']:.1f} s", file=out)
        for c in commits:
            print(f"  batch {c['batch']}: snapshot {c['snapshot_id']}, {c['groups']} file "
                  f"groups, {c['rewritten_files']} files rewritten as {c['added_files']}",
                  file=out)
    deleted = sum(g.get("deleted_rows", 0) for g in groups)
    removed_deletes = len(result.report.get("removed_delete_files", ()))
    if deleted or removed_deletes:
        print(f"position deletes: {deleted} deleted rows left out, {removed_deletes} delete "
              f"files that referenced only rewritten files removed", file=out)
    if result.boundaries is not None:
        kept = (f"recorded in {args.report_json}" if args.report_json
                else "not kept (add --report-json FILE to reuse them with --boundaries FILE)")
        print(f"rank boundaries ({result.report['rank_bits']} bits per column): {kept}", file=out)
    if not args.no_report:
        with stage(REPORT):
            report = skipping(table, result, level="row_groups")
        print(format_report(report), file=out)
    if failed:
        first = failed[0]
        print(f"error: {len(failed)} file group(s) failed and were not committed (the "
              f"other batches were); the first, batch {first['batch']}, partition "
              f"{first['partition'] or '(unpartitioned)'}: {first['error']}", file=sys.stderr)
        return FAILURE
    return 0
