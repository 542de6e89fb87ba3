"""ISA features per CPU/cluster, per-CPU problem lists, cap reasons, the watch window
summary and the env snapshot's CPU times, on fixture roots changed on disk."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from qprof.cli import main
from qprof.hw import CapWatch, read_frequencies, read_topology, take_env_snapshot
from qprof.hw.cpuinfo import parse_cpuinfo
from qprof.hw.format import cap_cell
from qprof.hw.sysfs import problems_by_cpu

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hw"
CPU = "sys/devices/system/cpu"


def copy(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    shutil.copytree(FIXTURES / name, root)
    return root


def run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(list(args)) == 0
    return capsys.readouterr().out


def test_x86_isa_per_cpu_and_cluster() -> None:
    topo = read_topology(FIXTURES / "x86-hybrid")
    for c in topo.cpus:
        assert c.isa is not None and {"avx2", "bmi2", "sha_ni"} <= set(c.isa)
        assert c.isa_missing is not None and "avx512f" in c.isa_missing
        assert c.isa_source == "/proc/cpuinfo"
    assert all("avx2" in (cl.isa or []) and "avx512f" in (cl.isa_missing or [])
               for cl in topo.clusters)


def test_arm_isa_and_offline_cpu_takes_its_cluster() -> None:
    topo = read_topology(FIXTURES / "arm-offline")
    cpu5 = topo.cpu(5)
    assert cpu5 is not None and cpu5.online is False
    assert cpu5.isa == ["asimd", "aes", "pmull", "sha2"] and cpu5.isa_source == "cluster"
    assert topo.clusters[1].isa_missing == ["sha3", "sha512", "asimddp", "sve", "sve2"]
    seeds = read_topology(FIXTURES / "seeds-arm")
    assert "asimddp" in (seeds.cpu(6).isa or [])  # type: ignore[union-attr]


def test_isa_in_table_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "topology", "--root", str(FIXTURES / "x86-hybrid"))
    assert "ISA" in out and "avx2 bmi2 sha_ni no avx512f" in out
    data = json.loads(run(capsys, "topology", "--root", str(FIXTURES / "seeds-arm"), "--json"))
    assert data["cpus"][0]["isa"][0] == "asimd" and "sve" in data["clusters"][1]["isa_missing"]


def test_old_kernel_single_features_block_applies_to_all(tmp_path: Path) -> None:
    root = copy(tmp_path, "arm-offline")
    (root / "proc/cpuinfo").write_text(
        "Processor\t: ARMv7 Processor rev 3 (v7l)\nprocessor\t: 0\nBogoMIPS\t: 38.40\n\n"
        "processor\t: 1\nBogoMIPS\t: 38.40\n\nFeatures\t: half thumb fastmult vfp edsp neon "
        "vfpv3 tls vfpv4 idiva idivt\nCPU implementer\t: 0x41\nCPU architecture: 7\n"
        "CPU variant\t: 0x0\nCPU part\t: 0xc07\nCPU revision\t: 3\n\nHardware\t: test\n")
    topo = read_topology(root)
    listed = [c for c in topo.cpus if c.cpu in (0, 1)]
    assert all(c.isa == ["neon"] for c in listed)
    assert all(c.isa_source == "/proc/cpuinfo (one block for all CPUs)" for c in listed)


def test_no_feature_line_under_a_root_is_unknown(tmp_path: Path) -> None:
    root = copy(tmp_path, "x86-hybrid")
    text = (root / "proc/cpuinfo").read_text()
    (root / "proc/cpuinfo").write_text(
        "\n".join(line for line in text.splitlines() if not line.startswith("flags")) + "\n")
    topo = read_topology(root)
    assert all(c.isa is None and c.isa_missing is None for c in topo.cpus)
    assert any("no flags line" in p for p in topo.problems)  # py-cpuinfo only for /


def test_truncated_cpuinfo_drops_the_cut_line(tmp_path: Path) -> None:
    data = parse_cpuinfo("processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd0")
    assert data.processors[0].get("CPU part") is None
    assert any("truncated" in p for p in data.problems)


def test_known_little_cluster_does_not_name_the_big_one(tmp_path: Path) -> None:
    root = copy(tmp_path, "seeds-arm")
    text = (root / "proc/cpuinfo").read_text()
    (root / "proc/cpuinfo").write_text(text.split("processor\t: 6")[0])  # Silver only
    topo = read_topology(root)
    assert topo.cpu(0).uarch == "Cortex-A55"  # type: ignore[union-attr]
    assert topo.cpu(6).uarch is None and topo.cpu(7).uarch is None  # type: ignore[union-attr]
    assert any("faster cluster" in p for p in topo.problems)


def test_every_cpu_row_carries_its_problems(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    root = copy(tmp_path, "seeds-arm")
    (root / CPU / "cpu6/cpufreq/cpuinfo_max_freq").write_text("12ab\n")
    (root / CPU / "cpu0/cpufreq/scaling_cur_freq").write_text("")
    for command in ("topology", "freq"):
        data = json.loads(run(capsys, command, "--root", str(root), "--json"))
        rows = {r["cpu"]: r for r in data["cpus"]}
        assert any("not a number" in p for p in rows[6]["problems"])
        assert any("scaling_cur_freq: empty" in p for p in rows[0]["problems"])
        assert rows[3]["problems"] == []
    reading = read_frequencies(root)
    assert cap_cell(reading.cpu(6)) == "unknown (hardware max unreadable)"  # type: ignore


def test_problems_by_cpu_understands_lists_and_policies() -> None:
    got = problems_by_cpu(["MIDR of CPUs 4-5 not reported",
                           "/sys/devices/system/cpu/cpufreq/policy4/related_cpus: empty",
                           "cpu2: unknown part 0x123"], {4: [4, 5]})
    assert set(got) == {2, 4, 5} and len(got[5]) == 2


def test_offline_cpu_cap_says_offline() -> None:
    reading = read_frequencies(FIXTURES / "arm-offline")
    assert cap_cell(reading.cpu(5)) == "- (offline)"  # type: ignore[arg-type]


def test_active_acpi_processor_cooling_is_thermal(tmp_path: Path) -> None:
    root = copy(tmp_path, "x86-hybrid")
    (root / "sys/class/thermal/cooling_device2/cur_state").write_text("1\n")
    (root / CPU / "cpu2/cpufreq/scaling_max_freq").write_text("3300000\n")
    cpu2 = read_frequencies(root).cpu(2)
    assert cpu2 is not None and cpu2.capped and cpu2.cap_cause == "thermal"
    assert cpu2.cap_factor == 1.33


def test_watch_window_lines_and_throttle(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    root = copy(tmp_path, "x86-hybrid")
    watch = CapWatch(root)
    watch.sample(now=1.0)
    (root / CPU / "cpu0/thermal_throttle/core_throttle_count").write_text("5\n")
    (root / CPU / "cpu1/cpufreq/scaling_max_freq").write_text("2200000\n")
    watch.sample(now=2.0)
    assert watch.summary(0).throttled is True and watch.summary(4).throttled is False
    cl = watch.cluster_summary(0)
    assert cl.throttled is True and cl.capped_now is True and cl.max_factor == 2.0
    from qprof.commands.freq import window_lines

    lines = window_lines(watch, watch.topology)  # type: ignore[arg-type]
    assert len(lines) == 1 and "worst 2.00x by policy" in lines[0]
    assert "thermal throttling: +5" in lines[0]
    data = json.loads(run(capsys, "freq", "--root", str(root), "--watch", "0.1", "--count",
                          "1", "--json"))
    assert data["cluster_cap_states"]["0"]["capped_now"] is True


def test_env_cpu_times_and_reported_clock() -> None:
    snap = take_env_snapshot(FIXTURES / "vm-this-machine")
    assert snap["cpu_times"]["0"]["steal"] >= 0 and set(snap["cpu_times"]) == {"0", "1"}
    assert snap["cpus"][0]["reported_khz"] and snap["cpus"][0]["cur_khz"] is None
    assert snap["cpus"][0]["isa"] and snap["busy"] is None  # busy: live machine only
    json.dumps(snap)


def test_env_live_busy_window_via_psutil() -> None:
    snap = take_env_snapshot("/", busy_window_s=0.05)
    busy = snap["busy"]
    assert busy is not None and busy["source"] == "psutil.cpu_times_percent"
    assert all(0 <= v["busy_pct"] <= 100 for v in busy["cpus"].values())


def test_py_cpuinfo_fallback_answers_or_says_nothing() -> None:
    from qprof.hw import isa

    flags = isa.py_cpuinfo_flags()  # CPUID on the live machine; None where unsupported
    assert flags is None or all(isinstance(f, str) for f in flags)


@pytest.mark.parametrize(("impl", "part", "name", "uarch"), [
    (0x41, 0xD8F, "Cortex-A320", "Cortex-A320"),
    (0x41, 0xD8B, "C1-Pro", "C1-Pro"),
    (0x48, 0xD41, "Cortex-A77", "Cortex-A77"),  # HiSilicon wrapping an Arm design
    (0x61, 0x012, "Lightning", "Lightning"),
    (0x4E, 0x010, "Olympus", "Olympus"),
    (0x46, 0x003, "MONAKA", "MONAKA"),
])
def test_parts_match_current_lscpu(impl: int, part: int, name: str, uarch: str) -> None:
    from qprof.hw import parts

    decoded = parts.arm_part(impl, part)
    assert (decoded.part_name, decoded.uarch, decoded.problem) == (name, uarch, None)


def test_arm64_hwcaps_are_system_wide(tmp_path: Path) -> None:
    root = copy(tmp_path, "arm-offline")
    text = (root / "proc/cpuinfo").read_text()
    (root / "proc/cpuinfo").write_text("processor\t: 4" + text.split("processor\t: 4")[1])
    topo = read_topology(root)
    cpu0 = topo.cpu(0)
    assert cpu0 is not None and cpu0.isa == ["asimd", "aes", "pmull", "sha2"]
    assert cpu0.isa_source is not None and "system-wide" in cpu0.isa_source
