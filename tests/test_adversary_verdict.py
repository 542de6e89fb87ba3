"""The worst-signature figure in the verdict, on the seeds' Silver (fixture seeds-arm,
CPU 2, the seeds' medians): shown beside the median VU everywhere (check JSON and text,
metrics, monitor, report), deciding only when the profile holds its constants to it.

The factors come from a summary file written here the way `qprof adversary` keeps it
(no measurement): 1.09x ground valid, 1.32x crafted invalid, this host's 256s figures.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from gen_run_json import _SUMMARY, ALL_SUITES, CACHE_128S, SHIPPED, gen_lines, qprof_env

from qprof.consensus import load_profile
from tests.test_consensus_policy import HW, SILVER, judge

SUITE = "SLH-DSA-SHAKE-256s"


@pytest.fixture
def factors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "adversary"
    directory.mkdir()
    summary = {"suite": SUITE, "cpu": 1, "cpu_model": "Intel(R) Xeon(R) Processor",
               "measured_at": 0.0,
               "worst": {"ground": {"ratio": 1.092, "low": 1.059, "high": 1.114,
                                    "hash_calls": 4919, "label": ""},
                         "crafted_invalid": {"ratio": 1.322, "low": 1.320, "high": 1.365,
                                             "hash_calls": 6059, "label": ""}}}
    (directory / f"{SUITE}.last.json").write_text(json.dumps({"summary": summary,
                                                              "signatures": []}))
    monkeypatch.setenv("QPROF_ADVERSARY_DIR", str(directory))
    return directory


def _held_to_worst(tmp_path: Path) -> str:
    text = load_profile("qanum").path.read_text().replace(
        'constants_held_to = "median"', 'constants_held_to = "worst_signature"')
    path = tmp_path / "qanum-worst.toml"
    path.write_text(text.replace('name = "qanum"', 'name = "qanum-worst"'))
    return str(path)


@pytest.mark.usefixtures("factors")
def test_silver_shows_the_worst_signature_against_3600_held_to_the_median() -> None:
    results = judge("qanum", HW / "seeds-arm", 2, SILVER)
    r = results[SUITE]
    w = r.worst_signature
    assert r.vu_estimate == 3492 and r.decision == "covered" and r.held_to == "median"
    assert w is not None and w.kind == "crafted_invalid" and w.median_vu == 3492
    assert w.vu > 3600 and w.vu_ci[0] <= w.vu <= w.vu_ci[1]
    assert w.covered_by(3600) is False
    assert results["ML-DSA-87"].worst_signature is None  # no chain cost to choose
    from qprof.consensus.judgement_codec import coverage_json

    row = coverage_json(r, "auto")
    assert row["vu_worst_signature"] == w.vu and row["constants_held_to"] == "median"
    json.dumps(row)


def test_a_profile_may_bind_the_worst_signature(factors: Path, tmp_path: Path) -> None:
    results = judge(_held_to_worst(tmp_path), HW / "seeds-arm", 2, SILVER)
    r = results[SUITE]
    assert r.held_to == "worst_signature" and r.decision == "not_covered"
    assert r.policy_decision == "not_covered" and r.margin is not None and r.margin < 0
    assert "the constants are held to it" in r.verdict
    assert results["ML-DSA-87"].decision == "covered"


def test_no_adversary_run_no_figure() -> None:
    r = judge("qanum", HW / "seeds-arm", 2, SILVER)[SUITE]
    assert r.worst_signature is None and r.decision == "covered"


@pytest.mark.usefixtures("factors")
def test_views_show_it(capsys: pytest.CaptureFixture[str]) -> None:
    from qprof.commands.check_adversarial import print_worst, reference_json
    from qprof.consensus.verdict_types import CoverageResult
    from qprof.report.headroom import worst_lines
    from qprof.service.metrics_adversarial import worst_signature_metrics
    from qprof.tui.sources.consensus import Evaluation, evaluation_from_json, evaluation_to_json

    profile = load_profile("qanum")
    results = list(judge("qanum", HW / "seeds-arm", 2, SILVER).values())
    print_worst(profile, results)
    text = capsys.readouterr().out
    assert "CPU 2 SLH-DSA-SHAKE-256s" in text and "OVER the constant 3600" in text
    assert "Silver (reference, the profile's medians)" in text
    refs = {x["kind"]: x for x in reference_json(profile) if x["core"] == "Silver"}
    assert set(refs) == {"ground", "crafted_invalid"}  # the chosen and the crafted one
    assert refs["ground"]["vu"] == 3813 and refs["crafted_invalid"]["vu"] == 4616
    assert all(x["suite"] == SUITE and x["projected"] for x in refs.values())
    assert "ground valid" in text and "crafted invalid" in text
    families = {f.name: f for f in worst_signature_metrics(results, profile)}
    (sample,) = families["qprof_vu_worst_signature"].samples
    assert sample.labels["suite"] == SUITE and sample.value > 3600
    assert families["qprof_constants_held_to_info"].samples[0].labels["held_to"] == "median"
    r = next(x for x in results if x.suite == SUITE)
    back = CoverageResult.from_dict(json.loads(json.dumps(r.to_dict())))
    assert back.worst_signature == r.worst_signature
    assert r.worst_signature is not None
    # The monitor: check's own lines (report.headroom.worst_lines), the reference cores'
    # projections included, carried from its child's evaluation to the panel.
    lines = tuple(worst_lines(profile, results, label=lambda cpu: f"@{cpu}"))
    back_eval = evaluation_from_json(evaluation_to_json(Evaluation(tuple(results),
                                                                   worst=lines)))
    (line,) = back_eval.worst
    assert line.startswith(f"{SUITE} worst signature") and "@2 " in line
    assert "OVER the constant 3600" in line and "Silver (reference, projected)" in line
    assert "held to the median" in line and "✗" not in line
    # Where the ratio does not bind, no over: the verdict's words (issue 52).
    (aside,) = worst_lines(profile, [replace(x, ratio_binds=False) for x in results],
                           label=lambda cpu: f"@{cpu}")
    head = aside.split("; Silver")[0]
    assert "not binding here" in head and "OVER" not in head


@pytest.mark.usefixtures("factors")
def test_default_check_text_has_one_worst_line_per_suite(
        capsys: pytest.CaptureFixture[str]) -> None:
    """check's default output, the report's and the monitor's words: one line per SLH-DSA
    suite, the measured CPU's figure and the reference core's projection."""
    from qprof.commands.check_adversarial import print_worst_lines
    from qprof.report.headroom import worst_lines

    profile = load_profile("qanum")
    results = list(judge("qanum", HW / "seeds-arm", 2, SILVER).values())
    lines = worst_lines(profile, results)
    assert len(lines) == 1 and lines[0].startswith(f"{SUITE} worst signature")
    assert "CPU 2 " in lines[0] and "Silver (reference, projected)" in lines[0]
    assert "OVER the constant 3600" in lines[0] and "held to the median" in lines[0]
    aside = worst_lines(profile, [replace(r, ratio_binds=False) for r in results])
    head = aside[0].split("; Silver")[0]
    assert "not binding here" in head and "OVER" not in head
    print_worst_lines(profile, results)
    out = capsys.readouterr().out
    assert all(len(x) <= 100 for x in out.splitlines())
    assert out.count("worst signature (") == 1


DAMAGED_CACHES = {
    "summary_list": ('{"summary": []}', "summary"),
    "nan_ratio": ('{"summary": {"suite": "SLH-DSA-SHAKE-128s", "cpu_model": "x", '
                  '"measured_at": 1, "worst": {"ground": {"ratio": NaN, "low": 1, '
                  '"high": 1}}}, "signatures": []}', "NaN"),
    "string_ratio": (json.dumps({"summary": {**_SUMMARY, "worst": {"ground": {
        "ratio": "big", "low": 1.0, "high": 1.2}}}, "signatures": []}),
        "summary.worst.ground.ratio"),
    "zero_ratio": (json.dumps({"summary": {**_SUMMARY, "worst": {"ground": {
        "ratio": 0, "low": 0, "high": 1.2}}}, "signatures": []}),
        "summary.worst.ground.ratio"),
    "deep": ("[" * 100000 + "]" * 100000, "nested"),
}


@pytest.mark.parametrize("name", sorted(DAMAGED_CACHES))
def test_10_check_from_ignores_a_damaged_cache_with_one_warning(tmp_path: Path,
                                                                name: str) -> None:
    text, field = DAMAGED_CACHES[name]
    adv = tmp_path / "adv"
    adv.mkdir()
    (adv / CACHE_128S).write_text(text)
    run = gen_lines(tmp_path / "run.jsonl", ALL_SUITES)
    r = qprof_env("check", "--from", str(run), "--json", env={"QPROF_ADVERSARY_DIR": str(adv)})
    assert "Traceback" not in r.stderr and r.returncode == 0, r.stderr[-2000:]
    warned = [x for x in r.stderr.splitlines() if "adversary cache ignored" in x]
    assert len(warned) == 1 and CACHE_128S in warned[0] and field in warned[0], r.stderr
    assert json.loads(r.stdout)["decision"] == "covered"


def test_10_metrics_go_on_without_the_damaged_cache(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from qprof.service.metrics_adversarial import worst_signature_metrics

    def reference_samples() -> list[object]:
        families = {f.name: f for f in worst_signature_metrics([], SHIPPED)}
        return families["qprof_vu_worst_signature_reference"].samples

    adv = tmp_path / "adv"
    adv.mkdir()
    (adv / CACHE_128S).write_text('{"summary": []}')
    monkeypatch.setenv("QPROF_ADVERSARY_DIR", str(adv))
    assert reference_samples() == []  # /metrics goes on without the figure (was a 500)
    (adv / CACHE_128S).write_text(json.dumps({"summary": _SUMMARY, "signatures": []}))
    assert reference_samples()  # a sound cache is read again
