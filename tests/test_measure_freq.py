"""Frequency caps seen during a round mark its records, with the factor and the sentence."""

from __future__ import annotations

from pathlib import Path

from qprof.measure import hwinfo
from qprof.measure.engine import FreqWatch
from qprof.measure.records import FreqSample


def fake_root(tmp: Path, scaling_max: int, hw_max: int = 2419200) -> Path:
    (tmp / "proc").mkdir(parents=True, exist_ok=True)
    (tmp / "proc/cpuinfo").write_text(
        "processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd0d\n\n")
    base = tmp / "sys/devices/system/cpu"
    f = base / "cpu0/cpufreq"
    f.mkdir(parents=True, exist_ok=True)
    (base / "online").write_text("0\n")
    (base / "possible").write_text("0\n")
    (base / "present").write_text("0\n")
    for name, value in (("cpuinfo_max_freq", hw_max), ("cpuinfo_min_freq", 300000),
                        ("scaling_max_freq", scaling_max), ("scaling_min_freq", 300000),
                        ("scaling_cur_freq", scaling_max), ("scaling_governor", "schedutil")):
        (f / name).write_text(f"{value}\n")
    return tmp


def test_capped_cpu_is_seen_with_its_factor(tmp_path):
    root = fake_root(tmp_path, 1080000)
    f = hwinfo.frequencies(root, [0])[0]
    assert f.capped is True
    assert f.hw_max_khz == 2419200 and f.max_khz == 1080000
    assert abs(f.cap_factor - 2419200 / 1080000) < 0.01
    text = hwinfo.cap_text(f.hw_max_khz, f.max_khz, f.cap_factor)
    assert text == ("held at 1.08 GHz instead of 2.42 GHz: absolute times about 2.2× slower; "
                    "ratios measured on the same core at the same time are not affected")


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
