"""Topology reader against 57 real devices' /proc and /sys files (pytorch/cpuinfo corpus).

Each device is written into a temporary root; core designs per CPU and cluster sizes
must agree with what the reference detector's own tests expect.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from qprof.hw import read_topology

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "cpuinfo-devices"
DEVICES = sorted(CORPUS.glob("*.json")) if CORPUS.is_dir() else []

# Devices where qprof's answer differs from the reference, and why. Empty: on this corpus
# every device with an expectation agrees on cluster sizes, core designs and MIDRs.
KNOWN_DIFFERENCES: dict[str, str] = {}

# Reference names -> ours: "cortex_a55r0" is Cortex-A55 revision r0, a revision we keep
# in the MIDR rather than in the design name.
_REVISION_SUFFIX = re.compile(r"r\d+(p\d+)?$")


def norm_uarch(name: str | None) -> str | None:
    if name is None:
        return None
    name = name.lower().replace("-", "_").replace(" ", "_")
    return _REVISION_SUFFIX.sub("", name).rstrip("_")


def materialise(device: dict, root: Path) -> None:
    for rel, content in device["files"].items():
        path = root / rel.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)


def compare(device: dict, root: Path) -> list[str]:
    """Differences between our reading and the reference ([] = agreement)."""
    materialise(device, root)
    topo = read_topology(root)
    expected = device["expected"]
    diffs = []
    ours = sorted((len(c.cpus), norm_uarch(c.uarch)) for c in topo.clusters)
    theirs = sorted((c["processor_count"], norm_uarch(c["uarch"])) for c in expected["clusters"])
    if ours != theirs:
        diffs.append(f"clusters {ours} != reference {theirs}")
    if expected.get("processors") is not None:
        clustered = sum(len(c.cpus) for c in topo.clusters)
        if clustered != expected["processors"]:
            diffs.append(f"{clustered} processors != reference {expected['processors']}")
    # Per CPU: every clustered CPU's design is its cluster's reference design.
    by_size_design = {(c["processor_count"], norm_uarch(c["uarch"])) for c in expected["clusters"]}
    for cl in topo.clusters:
        for cpu in cl.cpus:
            t = topo.cpu(cpu)
            if t is None or norm_uarch(t.uarch) != norm_uarch(cl.uarch):
                diffs.append(f"cpu{cpu} design {t and t.uarch} != cluster {cl.uarch}")
        if (len(cl.cpus), norm_uarch(cl.uarch)) not in by_size_design:
            diffs.append(f"cluster {cl.cpulist} {cl.uarch} not in reference")
    midrs = sorted((len(c.cpus), c.midr) for c in topo.clusters)
    ref_midrs = sorted((c["processor_count"], c["midr"]) for c in expected["clusters"])
    if ref_midrs and all(m for _, m in ref_midrs) and midrs != ref_midrs:
        diffs.append(f"MIDRs {midrs} != reference {ref_midrs}")
    return diffs


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.mark.skipif(not DEVICES, reason=f"corpus not found at {CORPUS}")
@pytest.mark.parametrize("path", DEVICES, ids=[p.stem for p in DEVICES])
def test_device_reads_without_error(path: Path, tmp_path: Path) -> None:
    device = _load(path)
    materialise(device, tmp_path)
    topo = read_topology(tmp_path)
    data = topo.to_dict()
    json.dumps(data)  # JSON-able
    assert topo.cpus and topo.clusters
    for c in topo.cpus:
        if c.present:
            assert c.cluster is not None, f"cpu{c.cpu} present but in no cluster"


@pytest.mark.skipif(not DEVICES, reason=f"corpus not found at {CORPUS}")
@pytest.mark.parametrize("path", DEVICES, ids=[p.stem for p in DEVICES])
def test_device_agrees_with_reference(path: Path, tmp_path: Path) -> None:
    device = _load(path)
    if not device.get("expected"):
        pytest.skip("no reference expectation for this device")
    diffs = compare(device, tmp_path)
    if device["device"] in KNOWN_DIFFERENCES:
        assert diffs, f"{device['device']} now agrees: remove it from KNOWN_DIFFERENCES"
    else:
        assert not diffs, "; ".join(diffs)


@pytest.mark.skipif(not DEVICES, reason=f"corpus not found at {CORPUS}")
def test_corpus_agreement_figure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agree = total = 0
    disagreeing = {}
    for i, path in enumerate(DEVICES):
        device = _load(path)
        if not device.get("expected"):
            continue
        total += 1
        diffs = compare(device, tmp_path / str(i))
        if diffs:
            disagreeing[device["device"]] = diffs
        else:
            agree += 1
    share = agree / total
    with capsys.disabled():
        print(f"\ncorpus agreement: {agree}/{total} devices = {share:.1%}"
              + (f"; differing: {sorted(disagreeing)}" if disagreeing else ""))
    assert set(disagreeing) == set(KNOWN_DIFFERENCES), disagreeing
    assert share >= 0.95
