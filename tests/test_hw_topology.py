"""Topology on the hand-made fixture roots, the VM snapshot and the parts tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qprof.hw import NotLinuxRoot, read_topology
from qprof.hw.parts import arm_part, chipset_name, x86_part

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hw"


def test_seeds_machine_clusters_and_designs() -> None:
    topo = read_topology(FIXTURES / "seeds-arm")
    assert topo.arch == "arm64"
    assert [(c.cpus, c.uarch) for c in topo.clusters] == [
        ([0, 1, 2, 3, 4, 5], "Cortex-A55"), ([6, 7], "Cortex-A77")]
    silver, gold = topo.clusters
    assert silver.part_name == "Kryo 4XX Silver" and silver.vendor == "Qualcomm"
    assert silver.core_class == "efficiency" and gold.core_class == "performance"
    assert silver.max_khz == 1804800 and gold.max_khz == 2419200
    cpu6 = topo.cpu(6)
    assert cpu6 is not None
    assert (cpu6.implementer, cpu6.part, cpu6.midr_source) == ("0x41", "0xd0d", "cpuinfo")
    # DynamIQ: topology says one cluster of 8; the frequency domains split it.
    assert silver.grouped_by == "cpufreq"
    data = topo.to_dict()
    assert data["cpus"][0]["uarch"] == "Cortex-A55"
    assert data["clusters"][1]["cpus"] == [6, 7]
    json.dumps(data)


def test_x86_hybrid_p_and_e_cores() -> None:
    topo = read_topology(FIXTURES / "x86-hybrid")
    assert topo.hybrid
    assert [(c.cpus, c.uarch, c.core_class) for c in topo.clusters] == [
        ([0, 1, 2, 3], "Golden Cove", "performance"), ([4, 5, 6, 7], "Gracemont", "efficiency")]
    cpu0 = topo.cpu(0)
    assert cpu0 is not None and cpu0.smt_siblings == [1] and cpu0.core_type == "cpu_core"
    assert cpu0.vendor == "Intel" and cpu0.family == 6 and cpu0.model == 154


def test_x86_policies_are_clusters_even_across_l2_modules() -> None:
    """Goldmont pairs cores on an L2, but policies 0-3 and 4-7 are the frequency domains:
    two clusters of four, not four modules of two."""
    topo = read_topology(FIXTURES / "x86-atom-2x4")
    assert [(c.cpus, c.uarch) for c in topo.clusters] == [
        ([0, 1, 2, 3], "Goldmont"), ([4, 5, 6, 7], "Goldmont")]
    assert all(c.grouped_by == "cpufreq" for c in topo.clusters)
    assert all(c.cpus == t.freq_domain for c in topo.clusters for t in topo.cpus
               if t.cluster == c.id)


def test_offline_cpu_keeps_its_cluster_and_design() -> None:
    topo = read_topology(FIXTURES / "arm-offline")
    cpu5 = topo.cpu(5)
    assert cpu5 is not None
    assert cpu5.online is False
    assert cpu5.uarch == "Cortex-A72" and cpu5.midr_source == "cluster"
    assert cpu5.max_khz == 1800000  # from the cpufreq policy that outlives the link
    big = topo.clusters[1]
    assert big.cpus == [4, 5] and big.online_cpus == [4]


def test_vm_snapshot_without_cpufreq() -> None:
    topo = read_topology(FIXTURES / "vm-this-machine")
    assert topo.arch == "x86_64"
    assert len(topo.clusters) == 1 and topo.clusters[0].cpus == [0, 1]
    assert topo.clusters[0].max_khz is None
    assert any("no cpufreq" in p for p in topo.problems)
    # The guest's family/model are the hypervisor's CPU model: labelled as reported.
    assert topo.clusters[0].uarch == "Zen 3, VM-reported"
    assert {c.uarch_source for c in topo.cpus} == {"hypervisor cpu model"}
    assert any("hypervisor's CPU model (family 25 model 1)" in p for p in topo.problems)


def test_vm_model_contradicted_by_flags_says_what_the_flags_suggest() -> None:
    """A guest whose CPU model says Rocket Lake while its flags show AMX: not Rocket Lake."""
    topo = read_topology(FIXTURES / "vm-amx-rocketlake")
    [cluster] = topo.clusters
    assert cluster.uarch == "Sapphire Rapids+, by flags"
    assert all(c.uarch_source == "flags" and "Rocket Lake" not in (c.uarch or "")
               for c in topo.cpus)
    [note] = [p for p in topo.problems if "under a hypervisor" in p]
    assert "says Rocket Lake" in note and "amx_tile" in note and "Sapphire Rapids" in note


def test_bare_metal_design_is_not_relabelled() -> None:
    topo = read_topology(FIXTURES / "x86-hybrid")
    assert {c.uarch_source for c in topo.cpus} == {"cpuid"}
    assert not any("hypervisor" in p for p in topo.problems)


def test_live_machine_reads() -> None:
    topo = read_topology("/")
    assert topo.cpus and topo.clusters
    assert all(c.cluster is not None for c in topo.cpus if c.present and c.online)


def test_not_a_linux_root(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    with pytest.raises(NotLinuxRoot, match="not a Linux root"):
        read_topology(tmp_path)
    assert issubclass(NotLinuxRoot, ValueError)


@pytest.mark.parametrize(("impl", "part", "variant", "uarch", "name"), [
    (0x51, 0x805, 0x7, "Cortex-A55", "Kryo 4XX Silver"),
    (0x51, 0x800, 0xA, "Cortex-A73", "Kryo 2XX Gold"),
    (0x51, 0x801, 0xA, "Cortex-A53", "Kryo 2XX Silver"),
    (0x51, 0x804, 0xD, "Cortex-A76", "Kryo 4XX Gold"),
    (0x51, 0x06F, 0x1, "Krait", "Krait"),
    (0x51, 0x205, 0x2, "Kryo", "Kryo Gold"),
    (0x51, 0x001, 0x1, "Oryon", "Oryon"),
    (0x48, 0xD40, 0x1, "Cortex-A76", "Cortex-A76"),
    (0x53, 0x001, 0x4, "Exynos M2", "Exynos M2"),
    (0x53, 0x001, 0x1, "Exynos M1", "Exynos M1"),
    (0x53, 0x002, 0x1, "Exynos M3", "Exynos M3"),
    (0x4E, 0x000, 0x0, "Denver", "Denver"),
    (0x41, 0xD0D, 0x1, "Cortex-A77", "Cortex-A77"),
    (0x43, 0x0AF, 0x1, "ThunderX2-99xx", "ThunderX2-99xx"),
    (0x61, 0x023, 0x1, "Firestorm-M1", "Firestorm-M1"),
    (0xC0, 0xAC3, 0x0, "Ampere-1", "Ampere-1"),
])
def test_arm_parts(impl: int, part: int, variant: int, uarch: str, name: str) -> None:
    decoded = arm_part(impl, part, variant)
    assert (decoded.uarch, decoded.part_name) == (uarch, name)


def test_unknown_ids_are_not_guessed() -> None:
    d = arm_part(0x41, 0x123)
    assert d.uarch is None and d.problem == "unknown part 0x123 of Arm"
    assert arm_part(0x99, 0x001).problem == "unknown implementer 0x99"
    x = x86_part("GenuineIntel", 6, 0x01)
    assert x.uarch is None and "unknown model" in (x.problem or "")


@pytest.mark.parametrize(("vendor", "family", "model", "uarch"), [
    ("AuthenticAMD", 0x19, 0x01, "Zen 3"),
    ("AuthenticAMD", 0x19, 0x61, "Zen 4"),
    ("AuthenticAMD", 0x17, 0x31, "Zen 2"),
    ("AuthenticAMD", 0x1A, 0x44, "Zen 5"),
    ("GenuineIntel", 6, 0x8F, "Sapphire Rapids"),
    ("GenuineIntel", 6, 0x37, "Silvermont"),
    ("GenuineIntel", 6, 0x4C, "Airmont"),
    ("GenuineIntel", 6, 0x35, "Saltwell"),
    ("GenuineIntel", 6, 0xB7, "Raptor Lake"),
])
def test_x86_models(vendor: str, family: int, model: int, uarch: str) -> None:
    assert x86_part(vendor, family, model).uarch == uarch


def test_chipset_names() -> None:
    assert chipset_name("Qualcomm Technologies, Inc MSM8994") == "MSM8994"
    assert chipset_name("SAMSUNG Exynos7420") == "Exynos 7420"
    assert chipset_name("MT6797T") == "MT6797"
    assert chipset_name("Kirin920") == "Kirin 920"
    assert chipset_name("something else") is None


# -- 9. the topology of N CPUs is read in time linear in N -----------------------------------

def _many_cpus(root: Path, n: int, own_siblings: bool) -> Path:
    """A root with ``n`` identical x86 CPUs, no cpufreq; ``own_siblings``: each CPU's
    topology names itself alone (per-core domains, merged by the clustering rule)."""
    cpu_dir = root / "sys/devices/system/cpu"
    cpu_dir.mkdir(parents=True)
    (cpu_dir / "online").write_text(f"0-{n - 1}\n")
    (root / "proc").mkdir()
    (root / "proc/cpuinfo").write_text("".join(
        f"processor\t: {i}\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 167\n"
        "model name\t: Test\nflags\t\t: fpu avx2\n\n" for i in range(n)))
    for i in range(n):
        (cpu_dir / f"cpu{i}").mkdir()
        if own_siblings:
            (cpu_dir / f"cpu{i}/topology").mkdir()
            (cpu_dir / f"cpu{i}/topology/core_siblings_list").write_text(f"{i}\n")
    return root


@pytest.mark.parametrize("own_siblings", [False, True], ids=["bare", "per-core"])
def test_9_topology_work_grows_linearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       own_siblings: bool) -> None:
    """The clustering rule's reads of CPU details, counted for 2,500 and 20,000 CPUs: 8
    times the CPUs, about 8 times the reads (the sequential scan and the merge of per-core
    domains compared each CPU with every member of its group: 64 times)."""
    from qprof.hw import cpudir
    from qprof.hw.topology import read_topology

    class Counted(cpudir.CpuDirFacts):
        reads = 0

        def __getattribute__(self, name: str) -> object:
            if name in ("max_khz", "min_khz", "midr", "package"):
                Counted.reads += 1
            return object.__getattribute__(self, name)

    monkeypatch.setattr(cpudir, "CpuDirFacts", Counted)
    reads = {}
    for n in (2_500, 20_000):
        Counted.reads = 0
        topo = read_topology(_many_cpus(tmp_path / str(n), n, own_siblings))
        reads[n] = Counted.reads
        assert [len(c.cpus) for c in topo.clusters] == [n]
    assert reads[20_000] < 10 * reads[2_500], reads
