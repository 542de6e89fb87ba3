"""Frequency caps seen during a round mark its records, with the factor and the sentence."""

from __future__ import annotations

from pathlib import Path

import pytest

from qprof.hw.caps import cap_message
from qprof.measure import hwinfo
from qprof.measure.freqwatch import FreqWatch
from qprof.measure.records import FreqSample


def fake_root(tmp: Path, scaling_max: int, hw_max: int = 2419200, ncpus: int = 1) -> Path:
    """A sysfs/procfs with ``ncpus`` Cortex-A77 CPUs held at ``scaling_max`` kHz."""
    (tmp / "proc").mkdir(parents=True, exist_ok=True)
    (tmp / "proc/cpuinfo").write_text("".join(
        f"processor\t: {c}\nCPU implementer\t: 0x41\nCPU part\t: 0xd0d\n\n"
        for c in range(ncpus)))
    base = tmp / "sys/devices/system/cpu"
    span = f"0-{ncpus - 1}" if ncpus > 1 else "0"
    for c in range(ncpus):
        f = base / f"cpu{c}/cpufreq"
        f.mkdir(parents=True, exist_ok=True)
        for name, value in (("cpuinfo_max_freq", hw_max), ("cpuinfo_min_freq", 300000),
                            ("scaling_max_freq", scaling_max), ("scaling_min_freq", 300000),
                            ("scaling_cur_freq", scaling_max),
                            ("scaling_governor", "schedutil")):
            (f / name).write_text(f"{value}\n")
    for name in ("online", "possible", "present"):
        (base / name).write_text(span + "\n")
    return tmp


def test_capped_cpu_is_seen_with_its_factor(tmp_path):
    root = fake_root(tmp_path, 1080000)
    f = hwinfo.frequencies(root, [0])[0]
    assert f.capped is True
    assert f.hw_max_khz == 2419200 and f.max_khz == 1080000
    assert abs(f.cap_factor - 2419200 / 1080000) < 0.01
    text = cap_message(f.max_khz, f.hw_max_khz, f.cap_factor, f.cap_cause)
    assert text == "held at 1.08 GHz instead of 2.42 GHz (×2.24 slower, cause policy)"


def test_freq_watch_marks_the_round(tmp_path):
    root = fake_root(tmp_path, 1080000)
    seen = []
    watch = FreqWatch(str(root), 0, "run", seen.append)
    watch.start(3)
    capped, factor, worst = watch.finish()
    assert capped is True and abs(factor - 2.24) < 0.01 and worst is not None
    samples = [r for r in seen if isinstance(r, FreqSample)]
    assert samples and all(s.round == 3 and s.capped for s in samples)
    # The cap lifted: the next round is not capped.
    fake_root(tmp_path, 2419200)
    watch.start(4)
    capped, factor, _ = watch.finish()
    assert capped is False and factor is None


def test_no_cpufreq_means_unknown_not_capped(tmp_path):
    (tmp_path / "sys/devices/system/cpu/cpu0").mkdir(parents=True)
    watch = FreqWatch(str(tmp_path), 0, "run", lambda r: None)
    watch.start(0)
    assert watch.finish() == (None, None, None)


@pytest.mark.fresh
def test_a_cap_that_lifts_mid_run_marks_only_its_rounds(tmp_path, monkeypatch):
    """Real workers on this machine; frequencies read from a fake sysfs we change."""
    import os

    import pytest

    from qprof.consensus.estimate.stopping import rule_for
    from qprof.measure.config import BenchConfig
    from qprof.measure.engine import run_bench
    from qprof.measure.records import Measurement, Note
    from qprof.verify import available_backends

    st = available_backends()
    backend = next((b for b in ("liboqs", "rustcrypto") if st[b].available), None)
    if backend is None:
        pytest.skip("neither liboqs nor rustcrypto available: " + st["liboqs"].reason)
    monkeypatch.setenv("QPROF_CACHE_DIR", str(tmp_path / "cache"))
    cpu = max(os.sched_getaffinity(0))
    root = fake_root(tmp_path / "root", 1080000, ncpus=cpu + 1)  # the measured CPU exists

    def lift_cap(event):
        if event.round == 1 and event.message == "starting":
            f = root / f"sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_max_freq"
            f.write_text("2419200\n")

    records = []
    config = BenchConfig(cpus=[cpu], suites=["ML-DSA-44", "ML-DSA-87"], backends=[backend],
                         mode="check", budget_s=0.02, rounds=3, max_rounds=3,
                         rounds_per_worker=1, root=str(root), command=["pytest"])
    # The clock-change notes come from the estimator's rule, which the engine is handed.
    config, rule = rule_for(config)
    summary = run_bench(config, records.append, progress=lift_cap, rule=rule)
    assert summary.status == "finished"
    caps = {m.round: (m.capped, m.cap_factor) for m in records if isinstance(m, Measurement)}
    assert caps[0][0] is True and abs(caps[0][1] - 2.24) < 0.01
    assert caps[1] == (False, None) and caps[2] == (False, None)
    notes = [n for n in records if isinstance(n, Note)]
    assert any(n.kind == "cap" and "round 1" in n.text and "held at 1.08 GHz" in n.text
               for n in notes)
    assert any(n.kind == "cap_change" and "capped rounds: 1" in n.text for n in notes)
