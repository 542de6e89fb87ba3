"""The watch loop over a fixture root whose sysfs files the tests change for real.

``make_root`` (also used by the other daemon tests) builds a small big.LITTLE machine:
cpus 0-1 in cluster 0 (1.80 GHz), cpus 2-3 in cluster 1 (2.42 GHz), one cpufreq policy
per cluster, like the seeds' ARM board.
"""

from __future__ import annotations

from pathlib import Path

from qprof.service.alerts import Alert, AlertDispatcher
from qprof.service.watch import Watcher

CPU_DIR = "sys/devices/system/cpu"
CLUSTERS = {0: ([0, 1], 1804800, "0x805"), 1: ([2, 3], 2419200, "0x804")}


def _w(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def make_root(base: Path) -> Path:
    root = base / "root"
    cpuinfo = []
    for _cid, (cpus, _khz, part) in CLUSTERS.items():
        for cpu in cpus:
            cpuinfo.append(f"processor\t: {cpu}\nBogoMIPS\t: 38.40\nFeatures\t: fp asimd\n"
                           f"CPU implementer\t: 0x51\nCPU architecture: 8\nCPU variant\t: 0x7\n"
                           f"CPU part\t: {part}\nCPU revision\t: 14\n")
    _w(root / "proc/cpuinfo", "\n".join(cpuinfo) + "Hardware\t: Qualcomm Technologies, Inc "
       "SM8150")
    _w(root / "proc/loadavg", "0.05 0.10 0.12 1/200 12345")
    _w(root / "proc/stat", "cpu  100 0 100 10000 0 0 0 0 0 0\ncpu0 25 0 25 2500 0 0 0 0 0 0")
    for name in ("possible", "present", "online"):
        _w(root / CPU_DIR / name, "0-3")
    for cid, (cpus, khz, _part) in CLUSTERS.items():
        policy = root / CPU_DIR / "cpufreq" / f"policy{cpus[0]}"
        for fname, value in (("related_cpus", " ".join(map(str, cpus))),
                             ("affected_cpus", " ".join(map(str, cpus))),
                             ("cpuinfo_max_freq", khz), ("cpuinfo_min_freq", 300000),
                             ("scaling_max_freq", khz), ("scaling_min_freq", 300000),
                             ("scaling_cur_freq", khz), ("scaling_governor", "schedutil"),
                             ("scaling_driver", "qcom-cpufreq-hw"),
                             ("scaling_available_governors", "performance schedutil")):
            _w(policy / fname, str(value))
        for cpu in cpus:
            cdir = root / CPU_DIR / f"cpu{cpu}"
            cdir.mkdir(parents=True, exist_ok=True)
            (cdir / "cpufreq").symlink_to(policy)
            if cpu:
                _w(cdir / "online", "1")
            topo = cdir / "topology"
            _w(topo / "physical_package_id", "0")
            _w(topo / "cluster_id", str(cid))
            _w(topo / "core_id", str(cpu))
            _w(topo / "core_siblings_list", "0-3")
            _w(topo / "thread_siblings_list", str(cpu))
            _w(cdir / "cpu_capacity", "1024" if cid else "400")
    return root


def set_policy(root: Path, cluster: int, name: str, value: str | int) -> None:
    first = CLUSTERS[cluster][0][0]
    _w(root / CPU_DIR / "cpufreq" / f"policy{first}" / name, str(value))


def cap(root: Path, cluster: int, khz: int | None) -> None:
    """Cap a cluster's policy at khz (None: lift the cap)."""
    khz = CLUSTERS[cluster][1] if khz is None else khz
    set_policy(root, cluster, "scaling_max_freq", khz)
    set_policy(root, cluster, "scaling_cur_freq", khz)


def set_online(root: Path, cpu: int, online: bool) -> None:
    """Take a CPU off/online as the kernel shows it: cpuN/online and the global list."""
    _w(root / CPU_DIR / f"cpu{cpu}" / "online", "1" if online else "0")
    cpus = [c for cl in CLUSTERS.values() for c in cl[0]]
    live = [c for c in cpus if c == 0 or (root / CPU_DIR / f"cpu{c}" / "online")
            .read_text().strip() == "1"]
    _w(root / CPU_DIR / "online", ",".join(map(str, live)))


def watcher(root: Path, samples: int = 3, hold: float = 5.0) -> tuple[Watcher, list[Alert]]:
    got: list[Alert] = []
    return Watcher(root, AlertDispatcher([got.append]), samples, hold), got


def test_reads_fixture_root(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    w, alerts = watcher(root)
    tick = w.tick(0.0)
    assert w.clusters() == {0: [0, 1], 1: [2, 3]}
    assert tick.cpus[2].max_khz == 2419200 and tick.cpus[2].capped is False
    assert tick.load.load1 == 0.05 and tick.load.online_cpus == 4
    assert alerts == []


def test_cap_alerts_follow_real_sysfs_changes_with_hysteresis(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    w, alerts = watcher(root, samples=3, hold=5.0)
    w.tick(0.0)
    t = 1.0
    # A cap that flickers every second (the policy written back and forth) never starts.
    for i in range(12):
        cap(root, 1, 1075200 if i % 2 == 0 else None)
        w.tick(t)
        t += 1
    assert [a.kind for a in alerts] == []
    # A cap that holds starts once, with its factor and cause.
    cap(root, 1, 1075200)
    for _ in range(8):
        w.tick(t)
        t += 1
    [started] = alerts
    assert (started.kind, started.cluster) == ("cap_started", 1)
    assert started.details["factor"] == 2.25 and started.details["cause"] == "policy"
    assert w.capped_cpus() == {2: 2.25, 3: 2.25}
    # Lifting it for one sample does not end it; lifting it for good does, once.
    cap(root, 1, None)
    w.tick(t)
    cap(root, 1, 1075200)
    w.tick(t + 1)
    t += 2
    cap(root, 1, None)
    for _ in range(8):
        w.tick(t)
        t += 1
    assert [a.kind for a in alerts] == ["cap_started", "cap_ended"]
    assert w.capped_cpus() == {}


def test_cap_present_at_start_is_reported_once(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    cap(root, 1, 1075200)
    w, alerts = watcher(root)
    for t in range(10):
        w.tick(float(t))
    assert [(a.kind, a.details.get("at_startup")) for a in alerts] == [("cap_started", True)]


def test_governor_change_and_cpu_offline(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    w, alerts = watcher(root)
    w.tick(0.0)
    set_policy(root, 0, "scaling_governor", "powersave")
    w.tick(1.0)
    set_online(root, 3, False)
    tick = w.tick(2.0)
    assert tick.cpus[3].online is False and tick.load.online_cpus == 3
    set_online(root, 3, True)
    w.tick(3.0)
    assert [(a.kind, a.cluster, a.cpu) for a in alerts] == [
        ("governor_changed", 0, None), ("cpu_offline", None, 3), ("cpu_online", None, 3)]
    assert alerts[0].details == {"old": "schedutil", "new": "powersave"}


def test_busy_share_from_proc_stat(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    w, _ = watcher(root)
    assert w.tick(0.0).load.busy_pct is None
    _w(root / "proc/stat", "cpu  400 0 400 10400 0 0 0 0 0 0")  # +600 busy of +1000
    assert w.tick(1.0).load.busy_pct == 60.0
