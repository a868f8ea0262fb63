"""usable_cores: the affinity capped by the cgroup's CPU quota (v2 and v1), which is what
sizes the thread and process pools and the parallel writer's encoders."""

import os

import pytest

from zorder.cpu import cores


def cgroup(tmp_path, membership, files):
    for path, text in files.items():
        target = tmp_path / "fs" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    (tmp_path / "fs").mkdir(exist_ok=True)
    (tmp_path / "self").write_text(membership)
    return str(tmp_path / "fs"), str(tmp_path / "self")


@pytest.mark.parametrize("membership, files, quota", [
    ("0::/\n", {"cpu.max": "150000 100000\n"}, 1.5),
    ("0::/\n", {"cpu.max": "max 100000\n"}, None),
    ("0::/\n", {}, None),
    # the smallest limit on the way from the process's cgroup to the root
    ("0::/a/b\n", {"a/b/cpu.max": "max 100000", "a/cpu.max": "200000 100000"}, 2.0),
    ("0::/a/b\n", {"a/b/cpu.max": "300000 100000", "a/cpu.max": "100000 100000"}, 1.0),
    # cgroup v1's cpu controller, under either of its mount names
    ("4:cpu,cpuacct:/docker/x\n", {"cpu,cpuacct/docker/x/cpu.cfs_quota_us": "50000",
                                   "cpu,cpuacct/docker/x/cpu.cfs_period_us": "100000"}, 0.5),
    ("4:cpuacct,cpu:/k\n", {"cpu/k/cpu.cfs_quota_us": "400000",
                            "cpu/k/cpu.cfs_period_us": "100000"}, 4.0),
    ("4:cpu,cpuacct:/\n", {"cpu,cpuacct/cpu.cfs_quota_us": "-1",
                           "cpu,cpuacct/cpu.cfs_period_us": "100000"}, None),
    ("4:memory:/m\n", {"memory/m/cpu.max": "100000 100000"}, None),
    ("0::/\n", {"cpu.max": "lots 100000"}, None),
    ("0::/\n", {"cpu.max": "100000 0"}, None),
    ("garbage\n", {"cpu.max": "100000 100000"}, None),
])
def test_the_quota_is_read_from_the_cgroup_files(tmp_path, membership, files, quota):
    root, self_file = cgroup(tmp_path, membership, files)
    assert cores.cgroup_cpu_quota(root, self_file) == quota


def test_no_cgroup_file_system_means_no_quota(tmp_path):
    assert cores.cgroup_cpu_quota(str(tmp_path), str(tmp_path / "missing")) is None


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no CPU affinity here")
@pytest.mark.parametrize("quota, expected", [(None, 8), (1.5, 2), (0.2, 1), (16.0, 8)])
def test_usable_cores_is_the_affinity_capped_by_the_quota(monkeypatch, quota, expected):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))
    monkeypatch.setattr(cores, "cgroup_cpu_quota", lambda: quota)
    assert cores.usable_cores() == expected

