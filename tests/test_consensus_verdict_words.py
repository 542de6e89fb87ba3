"""Issue 30, what the user reads: one word per meaning in the verdict (qprof.consensus.
verdict.WORDS), a run too contended to estimate says so with no figure, "not binding
here" first on a short line, and `qprof check`'s text within 100 columns (details behind
--verbose). Real recorded runs (tests/data/runs) and synthetic interleaved records run
through the real estimator and check; nothing is mocked.
"""

from __future__ import annotations

import argparse
import json
import lzma
import random
from pathlib import Path

import pytest

from qprof.commands import check as check_cmd
from qprof.consensus import load_profile
from qprof.consensus.policy import CoreDesign
from qprof.consensus.verdict import evaluate
from qprof.consensus.verdict_types import WORDS
from qprof.measure.config import RunSummary
from qprof.measure.records import Measurement

RUNS = Path(__file__).parent / "data" / "runs"
UNIT = "ML-DSA-44"
TURN = 8


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    check_cmd.add_parser(parser)
    return parser.parse_args(list(argv))


def _interleaved(seed: int, rounds: int, turns: int, ratios: dict[str, float],
                 busy_share: float) -> list[Measurement]:
    """Rounds of A/B turns (the unit at 100 us, each suite at ratio x 100 us); a share of
    the turns runs 1.5x slower (a neighbour on a shared VM)."""
    rng = random.Random(seed)
    out: list[Measurement] = []
    for rnd in range(rounds):
        busy = [rng.random() < busy_share for _ in range(turns + 1)]
        for suite, ratio in {UNIT: 1.0, **ratios}.items():
            samples = [100_000.0 * ratio * (1.5 if busy[t] else 1.0)
                       * (1 + rng.gauss(0, 0.004))
                       for t in range(turns + 1 if suite == UNIT else turns)
                       for _ in range(TURN)]
            ordered = sorted(samples)
            out.append(Measurement(
                run_id="sim", cpu=0, suite=suite, backend="liboqs", operation="verify",
                round=rnd, n=len(samples), median_ns=ordered[len(ordered) // 2],
                p95_ns=max(samples), samples_ns=samples, turn_size=TURN))
    return out


def _contended() -> list[Measurement]:
    """ML-DSA with quiet turns; SLH-DSA-SHAKE-128s timed in 2 turns a round, never quiet
    enough for a quiet ratio of its own: its figures would be the contended median's."""
    ms = _interleaved(7, 7, 40, {"ML-DSA-87": 2.87}, busy_share=0.5)
    for rnd in range(7):
        samples = [100_000.0 * 16.1 * (1 + 0.001 * (i % 7)) for i in range(TURN)]
        ms.append(Measurement(run_id="sim", cpu=0, suite="SLH-DSA-SHAKE-128s",
                              backend="liboqs", operation="verify", round=rnd,
                              n=len(samples), median_ns=samples[len(samples) // 2],
                              p95_ns=max(samples), samples_ns=samples, turn_size=TURN))
    return ms


def _verdict(out: str) -> str:
    """The verdict: the text's last line, and its continuation lines (wrapped at 100)."""
    lines = out.splitlines()
    start = max(i for i, x in enumerate(lines) if x.startswith("verdict: "))
    assert all(x.startswith("    ") for x in lines[start + 1:])
    return " ".join(x.strip() for x in lines[start:])


def _conclude(capsys: pytest.CaptureFixture[str], ms: list[Measurement], *argv: str
              ) -> tuple[int, str]:
    summary = RunSummary(run_id="sim", status="finished", reason=None, elapsed_s=60.0,
                         cpus=[0], measurements=ms)
    code = check_cmd.conclude(_args(*argv), load_profile("qanum"), summary, [])
    return code, capsys.readouterr().out


def test_a_contended_run_says_no_reliable_estimate_and_shows_no_figure(capsys) -> None:
    by = {r.suite: r for r in evaluate(load_profile("qanum"), _contended(), replicates=100)}
    slh = by["SLH-DSA-SHAKE-128s"]
    assert slh.decision == "no_estimate" and slh.state == "no_estimate"
    assert (slh.covered, slh.margin, slh.confidence) == (None, None, None)
    assert slh.headline.startswith("no reliable estimate: the host was contended ")
    assert slh.headline.endswith(" % of the time")
    assert slh.verdict.startswith("no reliable estimate") and "measure longer" in slh.verdict
    assert str(slh.vu_estimate) not in slh.headline + slh.verdict  # the median's figure
    assert by["ML-DSA-87"].state == "covered"

    code, out = _conclude(capsys, _contended())
    assert code == 3  # as an unsure run
    row = next(x for x in out.splitlines() if "SLH-DSA-SHAKE-128s" in x)
    assert "no reliable estimate" in row and "95 % CI" not in row and " — " in row
    assert "unsure" not in out
    assert _verdict(out).startswith("verdict: no reliable estimate: SLH-DSA-SHAKE-128s on CPU 0: "
                                    "the host was contended ")
    assert max(map(len, out.splitlines())) <= 100

    code, out = _conclude(capsys, _contended(), "--json")
    doc = json.loads(out)
    assert (code, doc["exit_code"], doc["decision"]) == (3, 3, "no_estimate")
    assert doc["no_estimate"] == ["SLH-DSA-SHAKE-128s on CPU 0"] and doc["unsure"] == []
    assert "measure longer" in doc["advice"]
    row = next(r for r in doc["results"] if r["suite"] == "SLH-DSA-SHAKE-128s")
    assert (row["decision"], row["state"], row["covered"]) == ("no_estimate", "no_estimate",
                                                                None)
    assert row["undecided"] and row["headline"].startswith("no reliable estimate")


def test_unsure_only_where_an_interval_straddles_a_binding_constant() -> None:
    """16.0 x the unit on a core qanum binds (unknown design): its interval holds 1600,
    "unsure"; the same records on a core it does not bind: "not binding here" first."""
    ms = _interleaved(11, 7, 30, {"ML-DSA-87": 2.87, "SLH-DSA-SHAKE-128s": 16.0,
                                  "SLH-DSA-SHAKE-256s": 36.5}, busy_share=0.2)
    profile = load_profile("qanum")
    binds = {r.suite: r for r in evaluate(profile, ms, replicates=200)}
    slh = binds["SLH-DSA-SHAKE-128s"]
    assert (slh.decision, slh.state) == ("unsure", "unsure")
    assert slh.headline.startswith("unsure: ") and "straddles the constant 1600" in slh.headline
    assert binds["SLH-DSA-SHAKE-256s"].headline.startswith("NOT covered: ")
    assert binds["ML-DSA-87"].headline.startswith("covered: ")
    x86 = {0: CoreDesign(cpu=0, uarch="Zen 4, VM-reported", part_name="AMD EPYC")}
    aside = {r.suite: r for r in evaluate(profile, ms, replicates=200, cores=x86)}
    for suite in ("ML-DSA-87", "SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-256s"):
        r = aside[suite]
        assert r.state == "not_binding" and r.policy_decision == "covered"
        assert r.headline.startswith(WORDS["not_binding"] + ": ")
        assert r.verdict.startswith("not binding here")
        for word in ("unsure", "covered", "NOT covered"):
            assert word not in r.headline and word not in r.verdict


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    name = sorted(RUNS.glob("*.jsonl.xz"))[0]
    path = tmp_path_factory.mktemp("runs") / name.name.removesuffix(".xz")
    path.write_bytes(lzma.decompress(name.read_bytes()))
    return path


@pytest.mark.parametrize("verbose", [False, True])
def test_checks_text_fits_100_columns_and_says_not_binding_first(recorded, capsys,
                                                                  verbose) -> None:
    argv = ["--from", str(recorded)] + (["--verbose"] if verbose else [])
    code = check_cmd.run(_args(*argv))
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert code == 0 and max(map(len, lines)) <= 100, max(lines, key=len)
    rows = [x for x in lines if x.startswith("CPU 1 SLH-DSA")]
    assert len(rows) == 2
    for row in rows:  # the word first, on a short line
        assert row[36:].startswith("not binding here: ") and len(row) <= 100
    assert any(x.startswith("CPU 1: not binding here: AMD EPYC") for x in lines)
    assert "unsure" not in out
    assert _verdict(out).startswith("verdict: every binding verdict holds")
    # The details (method, statistics, rounds) only with --verbose.
    assert any(x.startswith("method: ") for x in lines) is verbose
    assert ("other statistics, for comparison" in out) is verbose
    assert ("details: --verbose" in lines[0]) is not verbose


ROOT = Path(__file__).parents[1]


def test_readme_starts_with_the_quick_start_and_its_tables_agree_with_qprof() -> None:
    """The quick start (the two set-up commands, what you see) within 40 lines; the exit
    codes as check and `qprof --help` give them; one line per command, details in
    docs/COMMANDS.md; the adversary's tables in docs/ADVERSARY.md."""
    from qprof.cli import COMMANDS, EXIT_CODES_HELP

    lines = (ROOT / "README.md").read_text().splitlines()
    start = lines.index("## Quick start")
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("#"))
    assert end <= 40, end
    quick = "\n".join(lines[start:end])
    assert "./scripts/monitor      # the main job: qprof monitor on this machine" in quick
    assert "./scripts/test         # the test suite" in quick
    for tool in ("tmux", "prometheus", "systemd", "chromium"):
        assert tool in quick  # what scripts/test installs
    text = "\n".join(lines)
    codes = [line for line in lines if line.startswith("| ") and line[2:3].isdigit()]
    assert [int(line.split("|")[1]) for line in codes] == [0, 1, 2, 3, 4]
    assert sorted(set(check_cmd.EXIT_CODES.values())) == [0, 1, 3, 4]  # 2: errors
    for code in range(5):
        assert f"\n  {code}  " in "\n" + EXIT_CODES_HELP
    assert "unsure" in codes[3] and "no reliable estimate" in codes[3]
    rows = [line for line in lines if line.startswith("| `qprof ")
            and lines[lines.index(line) - 1].startswith(("| command", "|---", "| `qprof"))]
    for row in rows:
        name = row.split("`")[1].split()[1]
        assert name in COMMANDS, row
        assert len(row) <= 130, row  # one line, no paragraph
    assert "liboqs-0.16.0.tar.gz" in text and "QPROF_LIBOQS_SOURCE=PATH qprof setup liboqs" in text
    assert "1b82e61efbe55b8ed98374d8b6f416e948b59154612153c71909b060e1368941" in text
    assert "| ground valid" not in text
    assert "| ground valid" in (ROOT / "docs" / "ADVERSARY.md").read_text()
    details = (ROOT / "docs" / "COMMANDS.md").read_text()
    assert "## `qprof check --profile qanum" in details and "no reliable estimate" in details


def test_report_and_metrics_use_the_same_words(tmp_path: Path) -> None:
    """The contended suite: "no reliable estimate" in the report's estimate column (no
    figure), qprof_vu_no_estimate 1 and qprof_vu_unsure absent in the metrics."""
    from prometheus_client import CollectorRegistry, generate_latest

    from qprof.measure.jsonl import read_run
    from qprof.report.markdown import render_report
    from qprof.service.metrics import MetricsState, QprofCollector

    path = tmp_path / "run.jsonl"
    path.write_text("".join(m.to_json() + "\n" for m in _contended()))
    text = render_report([read_run(path)], load_profile("qanum"), [])
    row = next(x for x in text.splitlines() if x.startswith("| SLH-DSA-SHAKE-128s |"))
    assert "no reliable estimate" in row and "unsure" not in row
    profile = load_profile("qanum")
    state = MetricsState(profile=profile)
    state.coverage = evaluate(profile, _contended(), replicates=100)
    registry = CollectorRegistry()
    registry.register(QprofCollector(state, {"version": "t"}))
    metrics = generate_latest(registry).decode()
    assert ('qprof_vu_no_estimate{cpu="0",profile="qanum",suite="SLH-DSA-SHAKE-128s"} 1.0'
            in metrics)
    assert "qprof_vu_unsure{" not in metrics


def test_a_verifier_that_failed_its_known_answers_is_said_in_the_verdict(recorded, capsys,
                                                                         tmp_path) -> None:
    """The run's decision is no_estimate with no row of its own (check_preflight): the
    verdict line says why, from the MISMATCH, within 100 columns; exit 3."""
    from qprof.measure.records import FunctionalCheck

    lines = recorded.read_text().splitlines()
    run_id = json.loads(lines[0])["run_id"]
    bad = FunctionalCheck(run_id=run_id, backend="liboqs", suite="ML-DSA-87",
                          status="MISMATCH", cases=5, failed=["second:x valid"])
    path = tmp_path / "mismatch.jsonl"
    path.write_text("\n".join(lines[:-1] + [bad.to_json(), lines[-1]]) + "\n")
    code = check_cmd.run(_args("--from", str(path)))
    out = capsys.readouterr().out
    assert code == 3 and max(map(len, out.splitlines())) <= 100
    assert _verdict(out).startswith("verdict: no reliable estimate: known answers liboqs")
    assert "MISMATCH liboqs ML-DSA-87" in _verdict(out)


def test_a_contended_suite_on_a_core_the_ratio_does_not_bind(capsys) -> None:
    """"not binding here" first on a short line, then the contended share; the CPU's line
    says how contended and what to do (the verdict line names only binding suites)."""
    x86 = {0: CoreDesign(cpu=0, uarch="Zen 5, VM-reported", part_name="AMD EPYC")}
    r = next(r for r in evaluate(load_profile("qanum"), _contended(), replicates=100,
                                 cores=x86) if r.suite == "SLH-DSA-SHAKE-128s")
    assert (r.state, r.decision, r.policy_decision) == ("not_binding", "no_estimate",
                                                        "covered")
    assert r.headline.startswith("not binding here; no reliable estimate (contended ")
    assert 36 + len(r.headline) <= 100
    from qprof.commands.check_text import print_text

    summary = RunSummary(run_id="sim", status="finished", reason=None, elapsed_s=60.0,
                         cpus=[0], measurements=_contended())
    from qprof.consensus.judgement import judge

    judgement = judge(_contended(), load_profile("qanum"), cores=x86, replicates=100)
    print_text(load_profile("qanum"), summary, [], judgement, "covered", False)
    out = capsys.readouterr().out
    assert "CPU 0: no reliable estimate (SLH-DSA-SHAKE-128s): the host was contended " in out
    assert max(map(len, out.splitlines())) <= 100
