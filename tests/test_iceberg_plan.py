"""Issue 37, requirement 3: an Iceberg rewrite is incremental by default. It records its
clustering (snapshot summary, each file's footer with its curve range) and rewrites only
the file groups that need it: files not clustered this way, Iceberg's size criteria
(``min_file_size``...), or curve ranges that overlap (``min_overlap_depth``)."""

import json
import os
import sys

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("pyiceberg")
pytest.importorskip("sqlalchemy")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from iceberg_readers import duckdb_available, duckdb_rows  # noqa: E402
from test_iceberg import arrow_batch, catalog, local, make_table, multiset, zvalues_of_file  # noqa: E402,F401

from zorder.engines.iceberg_select import (  # noqa: E402
    CLUSTERING_KEY, RANGE_KEY, overlap_depth)
from zorder.iceberg import rewrite  # noqa: E402


def footer(path):
    kv = pq.ParquetFile(local(path)).metadata.metadata
    return {k.decode(): v.decode() for k, v in kv.items() if k.startswith(b"zorder.")}


def live_files(table):
    return {t.file.file_path: t.file for t in table.scan().plan_files()}


def test_a_clustered_table_commits_nothing_and_the_clustering_is_recorded(catalog):
    table = make_table(catalog, name="again", spec="identity", appends=2, rows=200)
    first = rewrite(table, ["l", "d"], target_file_size="20KB")
    summary = table.current_snapshot().summary.additional_properties
    recorded = json.loads(summary[CLUSTERING_KEY])
    assert recorded["curve"] == "zorder" and recorded["columns"] == ["l", "d"]
    assert recorded["iceberg"] and "var_length_contribution" in recorded
    for path in first.added_paths:
        kv = footer(path)
        assert kv[CLUSTERING_KEY] == summary[CLUSTERING_KEY]
        # the range is the file's first and last curve value (computed independently)
        z = zvalues_of_file(path, ["l", "d"])
        low, high = kv[RANGE_KEY].split(":")
        assert bytes.fromhex(low) == bytes(z[0]) and bytes.fromhex(high) == bytes(z[-1])
    snapshot = table.current_snapshot().snapshot_id

    again = rewrite(table, ["l", "d"], target_file_size="20KB")
    assert again.snapshot_id is None and again.rewritten_files == 0
    table.refresh()
    assert table.current_snapshot().snapshot_id == snapshot
    assert [g["selected"] for g in again.report["selection"]] == [False] * 3
    assert all("clustered by zorder(l, d)" in g["reason"] for g in again.report["selection"])


def test_appends_to_one_partition_rewrite_only_that_partition(catalog):
    table = make_table(catalog, name="append", spec="identity", appends=2, rows=200)
    rewrite(table, ["l", "d"], target_file_size="20KB")
    kept = {p for p, f in live_files(table).items() if f.partition[0] != "a"}
    rows = arrow_batch(np.random.default_rng(7), 60)
    table.append(rows.filter(pa.compute.equal(rows.column("cat"), "a")))
    before = table.scan().to_arrow()

    result = rewrite(table, ["l", "d"], target_file_size="20KB")
    chosen = [g for g in result.report["selection"] if g["selected"]]
    assert [g["partition"] for g in chosen] == ["cat=a"]
    assert "not clustered by zorder(l, d)" in chosen[0]["reason"]
    now = live_files(table)
    assert kept <= set(now) and set(result.added_paths) == set(now) - kept
    assert multiset(table.scan().to_arrow()) == multiset(before)


def live_entries(table):
    """{path: (status, snapshot id, data and file sequence numbers)} of the live entries
    of the current snapshot's data manifests, and the paths its DELETED entries name."""
    live, deleted = {}, {}
    for manifest in table.current_snapshot().manifests(table.io):
        for e in manifest.fetch_manifest_entry(table.io, discard_deleted=False):
            where = deleted if e.status.name == "DELETED" else live
            where[e.data_file.file_path] = (e.status.name, e.snapshot_id, e.sequence_number,
                                            e.file_sequence_number)
    return live, deleted


def test_a_rewrite_reads_each_manifest_once_and_keeps_the_other_files_history(
        catalog, monkeypatch):
    from pyiceberg.manifest import ManifestFile

    from zorder.engines import iceberg_manifests

    table = make_table(catalog, name="once", spec="identity", appends=2, rows=200)
    rewrite(table, ["l", "d"], target_file_size="20KB")
    rows = arrow_batch(np.random.default_rng(8), 60)
    table.append(rows.filter(pa.compute.equal(rows.column("cat"), "a")))
    before, _ = live_entries(table)
    replaced = {p for p, f in live_files(table).items() if f.partition[0] == "a"}
    real = ManifestFile.fetch_manifest_entry
    real_live = iceberg_manifests.read_live_entries
    reads = []

    def counted(self, io, discard_deleted=True):
        reads.append(self.manifest_path)
        return real(self, io, discard_deleted)

    def counted_live(io, manifest):
        reads.append(manifest.manifest_path)
        return real_live(io, manifest)

    monkeypatch.setattr(ManifestFile, "fetch_manifest_entry", counted)
    monkeypatch.setattr(iceberg_manifests, "read_live_entries", counted_live)
    result = rewrite(table, ["l", "d"], target_file_size="20KB")
    monkeypatch.undo()
    # the plan, the selection and the commit shared one read of each manifest
    assert reads and len(reads) == len(set(reads))
    assert set(result.removed_paths) == replaced
    after, deleted = live_entries(table)
    # the files of the other partitions kept their snapshot and sequence numbers
    for path, (status, snapshot_id, seq, file_seq) in before.items():
        if path not in replaced:
            assert after[path] == ("EXISTING", snapshot_id, seq, file_seq)
    snapshot_id = table.current_snapshot().snapshot_id
    assert {p: d[:2] for p, d in deleted.items()} == {
        p: ("DELETED", snapshot_id) for p in replaced}
    assert {p for p, d in after.items() if d[0] == "ADDED"} == set(result.added_paths)
    # the DELETED entries, of both manifests, are in the one written again (as Iceberg's
    # Java writes them), not in a manifest of their own
    counts = [(m.existing_files_count, m.deleted_files_count)
              for m in table.current_snapshot().manifests(table.io)]
    assert [c for c in counts if c[1]] == [(len(before) - len(replaced), len(replaced))]


def data_file_bytes(table, manifests):
    """{path: the Avro bytes of its data_file record} of the live entries of
    ``manifests``, as their files hold them."""
    from zorder.engines.iceberg_manifests import read_live_entries

    out = {}
    for m in manifests:
        live, encoded = read_live_entries(table.io, m)
        assert encoded is not None
        for e in live:
            out[e.data_file.file_path] = encoded.data_file(e.data_file)
    return out


def counted_carries(monkeypatch):
    """The commit's ``carry_encoded`` answers (whether it copied a manifest's records),
    appended to the list returned as the rewrite goes."""
    from zorder.engines import iceberg_commit

    real = iceberg_commit.carry_encoded
    carried = []
    monkeypatch.setattr(iceberg_commit, "carry_encoded",
                        lambda writer, encoded: carried.append(real(writer, encoded))
                        or carried[-1])
    return carried


@pytest.mark.parametrize("version", [1, 2])
def test_a_manifest_written_again_keeps_the_kept_files_records_byte_for_byte(
        catalog, monkeypatch, version):
    table = make_table(catalog, name="carry", spec="identity", appends=2, rows=200,
                       version=version)
    rewrite(table, ["l", "d"], target_file_size="20KB")
    rows = arrow_batch(np.random.default_rng(9), 60)
    table.append(rows.filter(pa.compute.equal(rows.column("cat"), "b")))
    old = data_file_bytes(table, table.current_snapshot().manifests(table.io))
    before, _ = live_entries(table)
    rows_before = multiset(table.scan().to_arrow())
    carried = counted_carries(monkeypatch)
    result = rewrite(table, ["l", "d"], target_file_size="20KB")
    assert carried == [True]
    new = data_file_bytes(table, table.current_snapshot().manifests(table.io))
    kept = set(before) - set(result.removed_paths)
    assert kept and kept <= set(new)
    for path in kept:
        assert new[path] == old[path]   # (copied, not encoded again)
    # ... and read back as they were, each with its own history
    after, _ = live_entries(table)
    for path in kept:
        assert after[path] == ("EXISTING",) + before[path][1:]
    previous = {t.file.file_path: t.file for t in table.scan(
        snapshot_id=table.current_snapshot().parent_snapshot_id).plan_files()}
    for t in table.scan().plan_files():
        if t.file.file_path in kept:
            f, g = t.file, previous[t.file.file_path]
            assert (f.record_count, f.file_size_in_bytes, f.partition, f.value_counts,
                    f.null_value_counts, f.lower_bounds, f.upper_bounds, f.column_sizes,
                    f.split_offsets) == (g.record_count, g.file_size_in_bytes, g.partition,
                                         g.value_counts, g.null_value_counts, g.lower_bounds,
                                         g.upper_bounds, g.column_sizes, g.split_offsets)
    assert multiset(table.scan().to_arrow()) == rows_before
    if duckdb_available():
        assert multiset(duckdb_rows(table, "i, l, d, s, cat")) == multiset(
            table.scan(selected_fields=("i", "l", "d", "s", "cat")).to_arrow())


def test_a_manifest_of_another_schema_is_written_again_from_its_entries(catalog,
                                                                         monkeypatch):
    """A v1 manifest kept after an upgrade to v2: its records are not copied into the
    v2 manifest (another Avro schema), its entries are encoded again."""
    table = make_table(catalog, name="upgraded", spec="identity", appends=2, rows=200,
                       version=1)
    rewrite(table, ["l", "d"], target_file_size="20KB")
    with table.transaction() as tx:
        tx.upgrade_table_version(2)
    rows = arrow_batch(np.random.default_rng(10), 60)
    table.append(rows.filter(pa.compute.equal(rows.column("cat"), "a")))
    before, _ = live_entries(table)
    rows_before = multiset(table.scan().to_arrow())
    carried = counted_carries(monkeypatch)
    result = rewrite(table, ["l", "d"], target_file_size="20KB")
    assert carried == [False]
    after, _ = live_entries(table)
    for path in set(before) - set(result.removed_paths):
        assert after[path] == ("EXISTING",) + before[path][1:]
    assert multiset(table.scan().to_arrow()) == rows_before
    if duckdb_available():
        assert multiset(duckdb_rows(table, "i, l, d, s, cat")) == multiset(
            table.scan(selected_fields=("i", "l", "d", "s", "cat")).to_arrow())


def test_manifests_are_written_in_blocks_of_entries(catalog, tmp_path, monkeypatch):
    from pyiceberg.avro.file import AvroFile
    from pyiceberg.manifest import ManifestEntry, ManifestEntryStatus, write_manifest

    from zorder.engines.iceberg_manifests import ENTRIES_PER_BLOCK, in_blocks

    table = make_table(catalog, name="blocks", spec="identity", appends=1, rows=100)
    entry = next(iter(table.current_snapshot().manifests(table.io))).fetch_manifest_entry(
        table.io)[0]
    blocks = []
    real = AvroFile._read_block

    def counted(self):
        blocks.append(real(self))
        return blocks[-1]

    monkeypatch.setattr(AvroFile, "_read_block", counted)
    for n in (1, ENTRIES_PER_BLOCK, 2 * ENTRIES_PER_BLOCK + 3):
        output = table.io.new_output(f"file://{tmp_path}/m{n}.avro")
        with in_blocks(write_manifest(2, table.spec(), table.schema(), output, 7,
                                      "deflate")) as writer:
            for k in range(n):
                writer.add_entry(ManifestEntry.from_args(
                    status=ManifestEntryStatus.EXISTING, snapshot_id=k,
                    sequence_number=k, file_sequence_number=k, data_file=entry.data_file))
        manifest = writer.to_manifest_file()
        assert manifest.existing_files_count == n
        blocks.clear()
        back = manifest.fetch_manifest_entry(table.io)
        assert [(e.snapshot_id, e.sequence_number, e.data_file) for e in back] == [
            (k, k, entry.data_file) for k in range(n)]
        # every block full but the last; PyIceberg alone writes one entry a block
        assert blocks == [ENTRIES_PER_BLOCK] * (n // ENTRIES_PER_BLOCK) + (
            [n % ENTRIES_PER_BLOCK] if n % ENTRIES_PER_BLOCK else [])


def test_partition_names_are_pyicebergs_partition_paths(catalog):
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import (
        BucketTransform, DayTransform, IdentityTransform, TruncateTransform)
    from pyiceberg.typedef import Record

    from test_iceberg import FIELD_ID, SCHEMA
    from zorder.engines.iceberg_plan import partition_name

    spec = PartitionSpec(
        PartitionField(FIELD_ID["cat"], 1000, IdentityTransform(), "cat"),
        PartitionField(FIELD_ID["tstz"], 1001, DayTransform(), "tstz day"),
        PartitionField(FIELD_ID["l"], 1002, BucketTransform(4), "l_bucket"),
        PartitionField(FIELD_ID["s"], 1003, TruncateTransform(2), "s/trunc"))
    table = catalog.create_table("db.names", SCHEMA, partition_spec=spec)
    for values in [("a b/c=d&é", 20454, 3, "xy"), (None, None, None, None), ("", 0, 0, "")]:
        record = Record(*values)
        assert partition_name(table.metadata, record) == table.spec().partition_to_path(
            record, table.schema())
    assert partition_name(make_table(catalog, name="plain", appends=0).metadata, Record()) == ""


def test_other_columns_or_options_cluster_again(catalog):
    table = make_table(catalog, name="other", spec="identity", appends=1, rows=200)
    rewrite(table, ["l", "d"])
    assert rewrite(table, ["l", "d"], curve="hilbert").rewritten_files == 3
    assert rewrite(table, ["l", "d"], curve="hilbert").snapshot_id is None
    assert rewrite(table, ["l", "s"]).rewritten_files == 3
    assert rewrite(table, ["l", "s"], var_length_contribution=4).rewritten_files == 3
    assert rewrite(table, ["l", "s"], var_length_contribution=4).snapshot_id is None
    assert rewrite(table, ["l", "s"], var_length_contribution=4,
                   rewrite_all=True).rewritten_files == 3


def test_icebergs_size_criteria_and_the_cap(catalog):
    table = make_table(catalog, name="sizes", spec="identity", appends=1, rows=600)
    rewrite(table, ["l", "d"], target_file_size=8000)
    files = live_files(table)
    per_partition = {}
    for f in files.values():
        per_partition.setdefault(f.partition[0], []).append(f.file_size_in_bytes)
    assert min(len(v) for v in per_partition.values()) >= 2
    # every file is outside a narrow size range: a partition of >= min_input_files files
    # is picked
    many = min(len(v) for v in per_partition.values())
    result = rewrite(table, ["l", "d"], target_file_size=8000, min_file_size=7999,
                     max_file_size=8001, min_input_files=many, dry_run=True)
    assert all(g["selected"] for g in result.report["selection"])
    assert "min_input_files" in result.report["selection"][0]["reason"]
    # Iceberg's default ratios with a target far above the files: 2+ small files adding
    # up to less than the target are left alone (min_input_files 5)
    assert rewrite(table, ["l", "d"], target_file_size="1MB",
                   min_input_files=99).snapshot_id is None
    # the cap: the first group cut to fit, the others left, as Iceberg's planner does
    capped = rewrite(table, ["l", "d"], rewrite_all=True, max_files_to_rewrite=1,
                     dry_run=True)
    assert capped.rewritten_files == 1
    reasons = [g["reason"] for g in capped.report["selection"]]
    assert "cut to 1 files by max_files_to_rewrite" in reasons[0]
    assert reasons[1:] == ["max_files_to_rewrite reached"] * 2


def test_selection_options_are_checked_with_their_names(catalog):
    table = make_table(catalog, name="checked", appends=1, rows=50)
    with pytest.raises(ValueError, match=r"min_file_size=.* \(--min-file-size\)"):
        rewrite(table, ["l"], target_file_size="1MB", min_file_size="2MB")
    with pytest.raises(ValueError, match=r"max_file_size=.* \(--max-file-size\)"):
        rewrite(table, ["l"], target_file_size="1MB", max_file_size="1KB")
    with pytest.raises(ValueError, match=r"min_input_files=.* \(--min-input-files\)"):
        rewrite(table, ["l"], min_input_files=0)
    with pytest.raises(ValueError, match=r"min_overlap_depth=.* \(--min-overlap-depth\)"):
        rewrite(table, ["l"], min_overlap_depth=1)
    with pytest.raises(ValueError, match="zorder.clustering"):
        rewrite(table, ["l"], snapshot_properties={CLUSTERING_KEY: "x"})


def test_overlap_depth_sweeps_closed_ranges():
    assert overlap_depth([]) == 0
    assert overlap_depth([(b"\x00", b"\x10"), (b"\x11", b"\x20")]) == 1
    assert overlap_depth([(b"\x00", b"\x10"), (b"\x10", b"\x20")]) == 2
    assert overlap_depth([(b"\x00", b"\x30"), (b"\x05", b"\x06"), (b"\x06", b"\x20")]) == 3
    assert overlap_depth([(b"\x00", b"\x01"), None, (b"\x30", b"\x31")]) == 2


def test_overlapping_curve_ranges_are_clustered_again_on_request(catalog):
    """A partition rewritten in two groups (max_file_group_size) is clustered, but its two
    halves overlap on the curve: sizes alone never pick it (Iceberg issue 17489), the
    overlap depth does (PR 17504)."""
    table = make_table(catalog, name="overlap", appends=2, rows=300)
    largest = max(f.file_size_in_bytes for f in live_files(table).values())
    rewrite(table, ["l", "d"], max_file_group_size=largest, target_file_size="1MB")
    assert len(live_files(table)) == 2
    assert rewrite(table, ["l", "d"], target_file_size="1MB").snapshot_id is None
    dry = rewrite(table, ["l", "d"], target_file_size="1MB", min_overlap_depth=2,
                  dry_run=True)
    assert "overlap 2 deep" in dry.report["selection"][0]["reason"]
    result = rewrite(table, ["l", "d"], target_file_size="1MB", min_overlap_depth=2)
    assert result.rewritten_files == 2 and result.added_files == 1
    after = rewrite(table, ["l", "d"], target_file_size="1MB", min_overlap_depth=2)
    assert after.snapshot_id is None
    assert "overlap depth 1" in after.report["selection"][0]["reason"]


def test_a_file_whose_snapshot_expired_is_asked_its_footer(catalog, monkeypatch):
    from zorder.engines import iceberg_select

    table = make_table(catalog, name="expired", spec="identity", appends=1, rows=100)
    rewrite(table, ["l"])
    real = iceberg_select._footers
    asked = []

    def footers(io, paths):
        asked.extend(paths)
        return real(io, paths)

    monkeypatch.setattr(iceberg_select, "_footers", footers)
    # as if every snapshot but the current one's summary were gone
    monkeypatch.setattr(type(table), "snapshots", lambda self: [])
    assert rewrite(table, ["l"]).snapshot_id is None
    assert len(asked) == 3


def test_cli_dry_run_says_per_partition_why_and_a_clustered_table_in_one_line(
        catalog, tmp_path, capsys):
    from zorder.__main__ import main

    make_table(catalog, name="cli", spec="identity", appends=1, rows=100)
    flags = ["--catalog", "test", "--uri", f"sqlite:///{tmp_path}/catalog.db", "--warehouse",
             f"file://{tmp_path}/wh", "--quiet", "--no-report"]
    assert main(["iceberg", "rewrite", "db.cli", "--columns", "l,d"] + flags) == 0
    capsys.readouterr()
    assert main(["iceberg", "rewrite", "db.cli", "--columns", "l,d"] + flags) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith(
        "nothing to rewrite: the 3 file groups planned are clustered by zorder(l, d)")
    assert main(["iceberg", "rewrite", "db.cli", "--columns", "l,i", "--dry-run"] + flags) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[1:] == [f"  cat={c}: selected, 1 of 1 file not clustered by zorder(l, i)"
                       for c in "abc"]
    assert main(["iceberg", "rewrite", "db.cli", "--columns", "l,d", "--dry-run",
                 "--min-overlap-depth", "2"] + flags) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[1].startswith("  cat=a: skipped, clustered by zorder(l, d), 1 file")
    assert out[1].endswith("overlap depth 1")
    assert main(["iceberg", "rewrite", "db.cli", "--columns", "l,d", "--rewrite-all",
                 "--max-files-to-rewrite", "2"] + flags) == 0
    assert "2 files" in capsys.readouterr().out
    assert not any(os.path.exists(tmp_path / n) for n in ("zorder-journal",))


def test_the_plan_without_a_filter_keeps_what_pyicebergs_planner_keeps(catalog):
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import ManifestGroupPlanner

    from zorder.engines.iceberg_manifests import ManifestEntries, plan_files

    table = make_table(catalog, name="plan_all", spec="identity", appends=2, rows=100)
    some = next(iter(live_files(table).values()))
    empty = DataFile.from_args(
        content=some.content, file_path=some.file_path + ".empty.parquet",
        file_format=some.file_format, partition=some.partition, record_count=0,
        file_size_in_bytes=some.file_size_in_bytes)
    empty.spec_id = some.spec_id
    with table.transaction() as txn, txn.update_snapshot().fast_append() as append:
        append.append_data_file(empty)
    manifests = table.current_snapshot().manifests(table.io)
    ours = plan_files(table.metadata, ManifestEntries(table.io), manifests, AlwaysTrue(),
                      False, lambda e: True)
    theirs = ManifestGroupPlanner(table.metadata, table.io).plan_files(manifests)
    # (the empty file is listed in the table, and left out of both plans)
    assert empty.file_path in {e.data_file.file_path for m in manifests
                               for e in m.fetch_manifest_entry(table.io)}
    assert sorted(t.file.file_path for t in ours) == sorted(
        t.file.file_path for t in theirs) == sorted(live_files(table))
