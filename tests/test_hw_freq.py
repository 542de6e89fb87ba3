"""Frequencies, the cap model and CapWatch on fixture roots (copied and changed on disk)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from faults import qprof

from qprof.hw import CapWatch, read_frequencies, read_topology, take_env_snapshot
from qprof.hw.freq import cap_factor

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hw"
CPU = "sys/devices/system/cpu"


def set_file(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def test_capped_gold_cores_report_cause_and_factor() -> None:
    reading = read_frequencies(FIXTURES / "seeds-arm")
    gold = reading.cpu(6)
    assert gold is not None
    assert (gold.hw_max_khz, gold.max_khz) == (2419200, 1080000)
    assert gold.capped is True and gold.cap_cause == "policy" and gold.cap_factor == 2.24
    assert gold.governor == "schedutil" and gold.driver == "qcom-cpufreq-hw"
    silver = reading.cpu(2)
    assert silver is not None and silver.capped is False and silver.cap_factor == 1.0
    assert silver.cur_khz == 1209600 and not silver.estimated
    clusters = {c.id: c for c in reading.clusters}
    assert clusters[1].capped and clusters[1].cap_factor == 2.24
    assert clusters[0].capped is False
    assert [z.temp_c for z in reading.thermal.zones][:2] == [38.1, 44.3]
    assert reading.thermal.cooling[1].cpus == [6, 7]  # thermal-cpufreq-1 -> 2nd policy
    json.dumps(reading.to_dict())


def test_cap_factor() -> None:
    assert cap_factor(2420000, 1080000) == 2.24
    assert cap_factor(None, 1080000) is None


def test_thermal_cause_when_cooling_device_active(seeds: Path) -> None:
    set_file(seeds, "sys/class/thermal/cooling_device1/cur_state", "4")
    gold = read_frequencies(seeds).cpu(7)
    assert gold is not None and gold.capped and gold.cap_cause == "thermal"


def test_boost_off_cause(tmp_path: Path) -> None:
    root = tmp_path / "x86"
    shutil.copytree(FIXTURES / "x86-hybrid", root)
    set_file(root, f"{CPU}/intel_pstate/no_turbo", "1")
    for c in range(4):
        set_file(root, f"{CPU}/cpu{c}/cpufreq/scaling_max_freq", "2200000")
    reading = read_frequencies(root)
    p = reading.cpu(0)
    assert p is not None and p.capped and p.cap_cause == "boost-off" and p.cap_factor == 2.0
    e = reading.cpu(5)
    assert e is not None and e.capped is False
    assert reading.no_turbo is True
    assert reading.thermal.throttle[0]["package_throttle_count"] == 3


def test_vm_frequency_unknown_not_invented() -> None:
    reading = read_frequencies(FIXTURES / "vm-this-machine", estimate=True)
    for f in reading.cpus:
        # estimate only runs on the live root; a snapshot cannot be measured
        assert f.cur_khz is None and f.capped is None and f.cap_factor is None
        assert not f.estimated
    assert any("no CPU frequency" in p for p in reading.problems)


def test_live_estimate_is_labelled() -> None:
    pytest.importorskip("numba")
    topo = read_topology("/")
    reading = read_frequencies("/", topo, estimate=True)
    online = [f for f in reading.cpus if f.online]
    assert online
    if any(f.cur_source in ("scaling_cur_freq", "cpuinfo_cur_freq") for f in online):
        pytest.skip("this machine reports its frequency; nothing to estimate")
    for f in online:
        assert f.estimated and f.cur_source == "estimated"
        assert f.cur_khz is not None and 100_000 < f.cur_khz < 10_000_000
        assert f.capped is None  # no hardware maximum known: no cap claimed


def test_capwatch_start_and_end(seeds: Path) -> None:
    topo = read_topology(seeds)
    watch = CapWatch(seeds, window_s=60, topology=topo)
    watch.sample(now=100.0)
    state = watch.summary(6)
    assert state.capped_now and state.since == 100.0 and state.factor == 2.24
    for c in (6, 7):  # the system lifts the cap
        set_file(seeds, f"{CPU}/cpu{c}/cpufreq/scaling_max_freq", "2419200")
    watch.sample(now=101.0)
    state = watch.summary(6)
    assert state.capped_now is False and state.since is None and state.last_ended == 101.0
    assert state.max_factor == 2.24 and state.capped_fraction == 0.5
    kinds = [(e.cpu, e.kind) for e in watch.events]
    assert (6, "started") in kinds and (6, "ended") in kinds
    for c in (6, 7):  # capped again, this time by thermal
        set_file(seeds, f"{CPU}/cpu{c}/cpufreq/scaling_max_freq", "1305600")
    set_file(seeds, "sys/class/thermal/cooling_device1/cur_state", "3")
    watch.sample(now=102.0)
    cluster = watch.cluster_summary(1)
    assert cluster.capped_now and cluster.cause == "thermal" and cluster.since == 102.0
    assert cluster.factor == round(2419200 / 1305600, 2)
    assert watch.cluster_summary(0).capped_now is False
    watch.sample(now=200.0)  # window slides: older samples fall out, the cap start stays
    state = watch.summary(6)
    assert state.samples == 1 and state.since == 102.0 and state.capped_fraction == 1.0


def test_env_snapshot(seeds: Path) -> None:
    snap = take_env_snapshot(seeds)
    json.dumps(snap)
    assert snap["load"]["1m"] == 0.41 and snap["kernel"] == "4.19.113-27166950"
    gold = snap["cpus"][6]
    assert gold["governor"] == "schedutil" and gold["capped"] and gold["cap_factor"] == 2.24
    assert any(t["type"] == "cpu-1-0-usr" and t["temp_c"] == 51.2 for t in snap["temperatures"])
    assert snap["taken_at"] > 0 and snap["taken_at_utc"].endswith("+00:00")


def test_env_snapshot_live() -> None:
    snap = take_env_snapshot("/")
    assert snap["load"] is not None and snap["cpus"]
    assert {c["cpu"] for c in snap["cpus"]} >= os.sched_getaffinity(0)
    json.dumps(snap)


def test_capwatch_counts_x86_throttle_events(tmp_path: Path) -> None:
    root = tmp_path / "x86"
    shutil.copytree(FIXTURES / "x86-hybrid", root)
    watch = CapWatch(root)
    watch.sample(now=1.0)
    set_file(root, f"{CPU}/cpu0/thermal_throttle/package_throttle_count", "7")
    watch.sample(now=2.0)
    assert watch.summary(0).throttle_events == 4 and watch.summary(1).throttle_events == 0
    assert watch.cluster_summary(0).throttle_events == 4


def test_capwatch_rereads_topology_when_cpus_change(seeds: Path) -> None:
    watch = CapWatch(seeds)
    watch.sample(now=1.0)
    set_file(seeds, f"{CPU}/online", "0-6")
    watch.sample(now=2.0)
    assert watch.topology is None  # read again on the next sample
    reading = watch.sample(now=3.0)
    assert watch.topology is not None and watch.topology.cpu(7).online is False
    assert reading.cpu(7).online is False


def test_env_snapshot_reads_hwmon() -> None:
    snap = take_env_snapshot(FIXTURES / "x86-hybrid")
    hw = [t for t in snap["temperatures"] if t["source"] == "hwmon"]
    assert {"type": "coretemp/Package id 0", "temp_c": 46.0, "zone": None,
            "source": "hwmon"} in hw


# -- 7, 8. governor names from /sys: first token, no control characters, bounded ------------

FORGED = "performance\nCRITICAL alert disagreement: forged\x1b[2J\x1b[H\r\x9b31m\n"


def _governors(root: Path) -> list[Path]:
    files = sorted((root / "sys/devices/system/cpu").glob("cpu*/cpufreq/scaling_governor"))
    assert files
    return files


def test_7_governor_with_newline_and_escapes_is_one_clean_word(seeds: Path) -> None:
    from qprof.hw.freq import read_frequencies
    from qprof.hw.sysfs import SysRoot

    for f in _governors(seeds):
        f.write_text(FORGED)
    freq = read_frequencies(seeds)
    assert {c.governor for c in freq.cpus} == {"performance"}
    assert SysRoot(seeds).line(
        "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")[0] == "performance"
    for cmd in (["topology"], ["freq"], ["freq", "--json"], ["env"]):
        r = qprof(*cmd, "--root", str(seeds))
        assert r.returncode == 0, (cmd, r.stderr)
        out = r.stdout + r.stderr
        assert "forged" not in out and "CRITICAL" not in out, cmd
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", out), (cmd, out)
        assert "performance" in out, cmd


def test_8_dev_zero_as_governor_is_not_read_whole(seeds: Path) -> None:
    from qprof.hw.freq import read_frequencies

    gov = _governors(seeds)
    gov[0].unlink()
    gov[0].symlink_to("/dev/zero")
    gov[1].write_text("p" * 100 + "\n")  # a word no kernel writes: over CPUFREQ_NAME_LEN
    freq = read_frequencies(seeds)
    assert freq.cpus[0].governor is None and freq.cpus[1].governor is None
    text = " ".join(freq.problems)
    assert "longer than 65536 bytes" in text and "not a name" in text  # and why
    for cmd in (["env"], ["freq", "--json"], ["topology", "--json"]):
        r = qprof(*cmd, "--root", str(seeds))
        assert r.returncode == 0, (cmd, r.stderr)
        assert len(r.stdout) + len(r.stderr) < 100_000, cmd
