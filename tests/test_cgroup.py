"""Issue 50: a cgroup's CPU limit as a cap. The reader over v1 and v2 trees (under
--root), and a real cgroup made here (v1 or v2, whichever this machine has) with a CPU
quota, under `qprof check`: the quota is shown, the run's throttling recorded, its rounds
judged as capped ones (cause "cgroup CPU quota", its factor), the block bound priced at
the quota. Without a quota none of it appears."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from qprof.hw.cgroup import CAUSE, NodeCgroupError, node_of, own_limit

CGROUP = Path("/sys/fs/cgroup")


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_v2_quota_of_an_ancestor_binds(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "proc/self/cgroup": "0::/node.slice/app.service\n",
        "proc/self/mountinfo": "30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
        "sys/fs/cgroup/cgroup.controllers": "cpuset cpu\n",
        "sys/fs/cgroup/cpuset.cpus.effective": "0-7\n",
        "sys/fs/cgroup/node.slice/cgroup.controllers": "cpuset cpu\n",
        "sys/fs/cgroup/node.slice/cpu.max": "150000 100000\n",
        "sys/fs/cgroup/node.slice/cpu.stat": "usage_usec 5\nnr_periods 40\n"
                                             "nr_throttled 7\nthrottled_usec 91000\n",
        "sys/fs/cgroup/node.slice/app.service/cgroup.controllers": "cpu\n",
        "sys/fs/cgroup/node.slice/app.service/cpu.max": "max 100000\n",
        "sys/fs/cgroup/node.slice/app.service/cpuset.cpus.effective": "2-3\n",
    })
    limit = own_limit(root)
    assert limit is not None and limit.version == 2
    assert limit.cpus == 1.5 and limit.factor == 1.0
    assert limit.limited_by == str(root / "sys/fs/cgroup/node.slice")
    assert limit.cpuset == (2, 3)
    assert limit.throttling is not None and limit.throttling.throttled == 7
    assert limit.throttling.throttled_us == 91000
    assert "CPU quota 1.50 CPU" in limit.text() and "cpuset 2-3" in limit.text()


def test_v1_quota_and_no_quota(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "proc/self/cgroup": "4:cpu,cpuacct:/docker/abc\n3:cpuset:/docker/abc\n0::/\n",
        "proc/self/mountinfo":
            "32 31 0:29 /docker/abc /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
            "33 31 0:30 /docker/abc /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n",
        "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "50000\n",
        "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
        "sys/fs/cgroup/cpu,cpuacct/cpu.stat": "nr_periods 10\nnr_throttled 4\n"
                                              "throttled_time 2000000000\n",
        "sys/fs/cgroup/cpuset/cpuset.effective_cpus": "1\n",
    })
    limit = own_limit(root)
    assert limit is not None and limit.version == 1
    assert limit.cpus == 0.5 and limit.factor == 2.0 and limit.cpuset == (1,)
    assert limit.throttling is not None and limit.throttling.throttled_us == 2_000_000
    (root / "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us").write_text("-1\n")
    limit = own_limit(root)
    assert limit is not None and limit.cpus is None and "no CPU quota" in limit.text()


def test_a_fifo_or_garbage_is_no_quota(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "proc/self/cgroup": "0::/x\n",
        "proc/self/mountinfo": "30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
        "sys/fs/cgroup/x/cgroup.controllers": "cpu\n",
        "sys/fs/cgroup/x/cpu.max": "lots 100000\n",
    })
    os.mkfifo(root / "sys/fs/cgroup/x/cpu.stat")
    limit = own_limit(root)
    assert limit is not None and limit.cpus is None and limit.throttling is None


def test_node_options_say_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(NodeCgroupError, match="expected NAME.service"):
        node_of("/", None, "bitcoind")
    with pytest.raises(NodeCgroupError, match="not a cgroup directory"):
        node_of("/", str(tmp_path), None)
    assert node_of("/", None, None) is None


def _quota_cgroup(cpus: float) -> Path | None:
    """A cgroup of this machine with ``cpus`` of quota (v2 when its cpu controller is on
    at the top, else v1's cpu hierarchy); None: cannot make one here."""
    name = f"qprof-test-{uuid.uuid4().hex[:8]}"
    period = 100_000
    try:
        top = CGROUP / "cgroup.subtree_control"
        if top.exists() and "cpu" in top.read_text().split():
            d = CGROUP / name
            d.mkdir()
            (d / "cpu.max").write_text(f"{int(cpus * period)} {period}\n")
            return d
        if (CGROUP / "cpu/cpu.cfs_quota_us").exists():
            d = CGROUP / "cpu" / name
            d.mkdir()
            (d / "cpu.cfs_period_us").write_text(f"{period}\n")
            (d / "cpu.cfs_quota_us").write_text(f"{int(cpus * period)}\n")
            return d
    except OSError:
        return None
    return None


@pytest.fixture
def quota_cgroup() -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("making a cgroup needs root")
    d = _quota_cgroup(0.25)
    if d is None:
        pytest.skip("cannot make a cgroup with a CPU quota here")
    yield d
    for _ in range(50):
        try:
            d.rmdir()
            break
        except OSError:
            import time

            time.sleep(0.1)


def _in(cgroup: Path) -> None:  # in the child, before exec
    (cgroup / "cgroup.procs").write_text(str(os.getpid()))


def _needs_liboqs() -> None:
    """`qprof check` gives a verdict with the profile's verifier only (else exit 2)."""
    from qprof.verify import available_backends

    status = available_backends().get("liboqs")
    if status is None or not status.available:
        pytest.skip(f"liboqs not available: {status.reason if status else 'unknown'}")


@pytest.mark.slow
@pytest.mark.timeout(400)
@pytest.mark.fresh
def test_qprof_check_in_a_cgroup_with_a_quota(quota_cgroup: Path, tmp_path: Path) -> None:
    from qprof.measure.fixtures import cached_pool, candidate_signers

    if not candidate_signers("SLH-DSA-SHAKE-256s")[0]:
        pytest.skip("nothing here signs SLH-DSA")
    _needs_liboqs()
    env = dict(os.environ, QPROF_CACHE_DIR=str(tmp_path / "cache"), QPROF_POOL_SIZE="2",
               HOME=str(tmp_path), QPROF_LOCK_DIR=str(tmp_path))
    for suite in ("SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-256s"):  # signed outside the quota
        cached_pool(suite, directory=tmp_path / "cache" / "fixtures", size=2, first=2)
    topo = subprocess.run([sys.executable, "-m", "qprof", "topology"], env=env,
                          capture_output=True, text=True, timeout=120, preexec_fn=lambda:
                          _in(quota_cgroup), check=True).stdout
    assert "cgroup: this process: cgroup v" in topo and "CPU quota 0.25 CPU" in topo
    cpu = str(max(os.sched_getaffinity(0)))
    run = tmp_path / "run.jsonl"
    res = subprocess.run([sys.executable, "-m", "qprof", "check", "--profile", "qanum",
                          "--cpus", cpu, "--budget", "0.05", "--max-rounds", "5",
                          "--time-limit", "15", "--json", "-o", str(run)],
                         env=env, capture_output=True, text=True, timeout=380,
                         preexec_fn=lambda: _in(quota_cgroup))
    assert res.returncode in (0, 1, 3), res.stderr
    records = [json.loads(line) for line in run.read_text().splitlines() if line.strip()]
    [throttled] = [r for r in records if r["type"] == "throttled"]
    assert throttled["quota_cpus"] == 0.25 and throttled["factor"] == 4.0
    assert throttled["throttled_periods"] > 0, throttled
    assert "cgroup CPU quota: 0.25 CPU" in res.stderr and "judged as a capped run" in res.stderr
    capped = [r for r in records if r["type"] == "measurement" and r.get("capped")]
    assert capped and all(r["cap_factor"] == 4.0 for r in capped)
    notes = [r["text"] for r in records if r["type"] == "note" and r.get("kind") == "cap"]
    assert any(CAUSE in n for n in notes), notes
    data = json.loads(res.stdout)
    texts = json.dumps(data)
    assert "under the node's CPU quota of 0.25 CPU (x4.00)" in texts
    print(f"throttled in {throttled['throttled_periods']} of {throttled['periods']} "
          f"periods; {len(capped)} measurements capped")


def test_without_a_quota_nothing_shows() -> None:
    out = subprocess.run([sys.executable, "-m", "qprof", "topology"], capture_output=True,
                         text=True, timeout=120, check=True).stdout
    limit = own_limit()
    if limit is not None and limit.cpus is not None:
        pytest.skip("this test runs under a CPU quota")
    assert "cgroup:" not in out
