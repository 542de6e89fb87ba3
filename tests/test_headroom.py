"""The adversary inside the constants (issue 32): `qprof calibrate --headroom`, the
worst-case block priced with the ground signatures for a profile held to the worst
signature, and the cost to reject the costliest invalid block.

A real recorded run (tests/data/runs, `qprof check` on an EPYC guest) is the fleet of one
node; its adversary factors are the ones `qprof adversary` measured (issue 32: ground
valid 1.19x / 1.09x, crafted invalid 1.44x / 1.32x the median, SLH-DSA-SHAKE-128s /
256s), recorded in the run as the engine records them and kept in the node's adversary
cache (QPROF_ADVERSARY_DIR, set per test by conftest) as `qprof adversary` keeps them.
"""

from __future__ import annotations

import json
import lzma
import math
import os
import re
from pathlib import Path

import pytest
from hostile_exit import clean_exit

from qprof.cli import main
from qprof.consensus import load_profile
from qprof.consensus.adversarial import AdversaryFactor
from qprof.consensus.calibrate import NodeEstimate, propose
from qprof.consensus.headroom import apply_headroom, invalid_block, reference_invalid_blocks
from qprof.consensus.verdict import evaluate
from qprof.measure.jsonl import read_run
from qprof.measure.records import AdversaryFactors

RUNS = Path(__file__).resolve().parent / "data" / "runs"
# suite -> kind -> (ratio, low, high)
FACTORS = {"SLH-DSA-SHAKE-128s": {"ground": (1.19, 1.12, 1.25),
                                  "crafted_invalid": (1.44, 1.38, 1.50)},
           "SLH-DSA-SHAKE-256s": {"ground": (1.09, 1.05, 1.12),
                                  "crafted_invalid": (1.32, 1.27, 1.37)}}
SLH = tuple(FACTORS)


def _adversary_cache() -> None:
    """The node's last `qprof adversary` runs, as SUITE.last.json."""
    where = Path(os.environ["QPROF_ADVERSARY_DIR"])
    where.mkdir(parents=True, exist_ok=True)
    for suite, kinds in FACTORS.items():
        worst = {k: {"ratio": r, "low": lo, "high": hi, "hash_calls": 3000}
                 for k, (r, lo, hi) in kinds.items()}
        (where / f"{suite}.last.json").write_text(json.dumps({"summary": {
            "suite": suite, "cpu_model": "AMD EPYC", "measured_at": 1.8e9, "worst": worst},
            "signatures": []}))


def _run_with_factors(tmp: Path) -> Path:
    """The recorded run, with the adversary records a run of today's engine carries."""
    lines = lzma.decompress(sorted(RUNS.glob("*.jsonl.xz"))[0].read_bytes()).decode()
    lines = lines.splitlines()
    run_id = json.loads(lines[0])["run_id"]
    extra = [AdversaryFactors(run_id=run_id, suite=s, kind=k, factor=r, low=lo, high=hi,
                              cpu_model="AMD EPYC", measured_at=1.8e9).to_json()
             for s, kinds in FACTORS.items() for k, (r, lo, hi) in kinds.items()]
    path = tmp / "node.jsonl"
    path.write_text("\n".join(lines[:-1] + extra + lines[-1:]) + "\n")
    return path


def _held_profile(tmp: Path) -> Path:
    """qanum held to the worst signature, the ratio binding on every core (the EPYC
    guest is none of qanum's reference cores)."""
    text = Path(load_profile("qanum").path).read_text()
    text = text.replace('ratio_binds = "reference"', 'ratio_binds = "all"')
    text = text.replace('constants_held_to = "median"',
                        'constants_held_to = "worst_signature"')
    path = tmp / "held.toml"
    path.write_text(text.replace('name = "qanum"', 'name = "held"'))
    return path


def test_ground_headroom_proposes_the_worst_valid_signature_and_it_is_covered(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _adversary_cache()
    run, held = _run_with_factors(tmp_path), _held_profile(tmp_path)
    proposed = tmp_path / "proposed.toml"
    # The profile is held to the worst signature: --headroom defaults to ground.
    code = main(["calibrate", str(run), "--profile", str(held), "-o", str(proposed),
                 "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code in (0, 1) and out["headroom"] == "ground" and not out["headroom_lacking"]
    results = evaluate(load_profile(held), read_run(run).measurements)
    for suite in SLH:
        top = max(r.estimate.ratio_ci[1] for r in results if r.suite == suite)
        want = math.ceil(100 * top * FACTORS[suite]["ground"][2] - 1e-9)
        assert out["constants"][suite] == want
        assert want > max(r.vu_ci_high for r in results if r.suite == suite)
    # Judged against the proposal (held to the worst signature): covered.
    assert load_profile(proposed).constants_held_to == "worst_signature"
    main(["check", "--from", str(run), "--profile", str(proposed), "--json"])
    rows = json.loads(capsys.readouterr().out)["results"]
    for suite in SLH:
        row = next(r for r in rows if r["suite"] == suite)
        assert row["decision"] == "covered", row["verdict"]
        # The worst-case block is priced with the ground signatures' times.
        assert "worst valid signatures" in row["worst_block"]["why"]


def test_median_headroom_keeps_the_estimates_and_names_nodes_without_factors() -> None:
    profile = load_profile("qanum")
    e = NodeEstimate("node-a", 1, "SLH-DSA-SHAKE-256s", "liboqs", 3500, 3510, 6.6e6, True,
                     ratio=34.9, ratio_high=35.05)
    assert apply_headroom(profile, [e], {}, "median").estimates == [e]
    applied = apply_headroom(profile, [e], {}, "crafted")
    assert applied.estimates == [e] and applied.lacking == ["node-a: SLH-DSA-SHAKE-256s"]
    f = AdversaryFactor("SLH-DSA-SHAKE-256s", "crafted_invalid", 1.32, 1.27, 1.37, None,
                        "x", 0.0)
    raised = apply_headroom(profile, [e], {"node-a": {e.suite: {f.kind: f}}}, "crafted")
    (r,) = raised.estimates
    assert r.vu_high == math.ceil(100 * 35.05 * 1.37 - 1e-9) and r.time_ns == e.time_ns
    assert propose(profile, raised.estimates).constants[e.suite] == r.vu_high


def test_invalid_block_on_the_seeds_silver_with_crafted_factors() -> None:
    """qanum on the seeds' Silver medians: SLH-DSA-SHAKE-128s has the most crafted time per
    VU (3.005 ms x 1.44 / 1600), so the block is 125 of them: 541 ms, 0.72 % of 75 s."""
    profile = load_profile("qanum")
    silver = profile.reference_cores[0]
    crafted = {s: AdversaryFactor(s, "crafted_invalid", k["crafted_invalid"][0],
                                  k["crafted_invalid"][1], k["crafted_invalid"][2], None,
                                  "AMD EPYC", 0.0) for s, k in FACTORS.items()}
    b = invalid_block(profile, silver.verify_median_ns, crafted, "Silver", projected=True)
    assert b is not None and b.block.composition == (("SLH-DSA-SHAKE-128s", 125),)
    assert b.time_ns == pytest.approx(125 * 3_005_000 * 1.44)
    assert b.interval_fraction == pytest.approx(b.time_ns / 75e9)
    assert "not binding" in b.text() and re.search(r"0\.72 % of the 75 s", b.text())


def test_invalid_block_shown_by_check_from_the_nodes_factors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _adversary_cache()
    assert [b.where for b in reference_invalid_blocks(load_profile("qanum"))] == [
        "Silver (reference core)", "Gold (reference core)"]
    run = _run_with_factors(tmp_path)
    main(["check", "--from", str(run), "--json"])
    blocks = json.loads(capsys.readouterr().out)["invalid_block"]
    silver = next(b for b in blocks if b["where"].startswith("Silver"))
    assert silver["binding_verdict"] is False and silver["interval_s"] == 75
    assert any(b["where"].startswith("CPU") for b in blocks)


def test_report_shows_the_constants_with_headroom_and_the_invalid_block(
        tmp_path: Path) -> None:
    """From the factors the run recorded (no adversary cache here)."""
    from qprof.report.markdown import render_report

    text = render_report([read_run(_run_with_factors(tmp_path))], load_profile("qanum"))
    section = text.split("## The adversary inside the constants", 1)[1].split("\n## ", 1)[0]
    assert "recorded in the run" in section and "Ground (95 % top)" in section
    silver = next(line for line in section.splitlines() if line.startswith("| Silver"))
    assert "125 x SLH-DSA-SHAKE-128s" in silver and "0.72 %" in silver


def test_metrics_export_the_factors_and_the_invalid_block() -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from qprof.service.metrics import MetricsState, QprofCollector

    _adversary_cache()
    state = MetricsState(profile=load_profile("qanum"))
    state.factors = [AdversaryFactors(run_id="r", suite=s, kind=k, factor=r, low=lo, high=hi,
                                      cpu_model="AMD EPYC", measured_at=1.8e9)
                     for s, kinds in FACTORS.items() for k, (r, lo, hi) in kinds.items()]
    registry = CollectorRegistry(auto_describe=False)
    registry.register(QprofCollector(state, {"version": "t"}))
    text = generate_latest(registry).decode()
    assert 'qprof_adversary_factor{kind="ground",suite="SLH-DSA-SHAKE-256s"} 1.09' in text
    line = next(x for x in text.splitlines()
                if x.startswith("qprof_invalid_block_seconds{") and "Silver" in x)
    assert float(line.split()[-1]) == pytest.approx(125 * 3_005_000 * 1.44 / 1e9)


def _cache_of(suite: str, worst: dict[str, tuple[float, float, float]]) -> None:
    where = Path(os.environ["QPROF_ADVERSARY_DIR"])
    where.mkdir(parents=True, exist_ok=True)
    (where / f"{suite}.last.json").write_text(json.dumps({"summary": {
        "suite": suite, "cpu_model": "AMD EPYC", "measured_at": 1.8e9,
        "worst": {k: {"ratio": r, "low": lo, "high": hi} for k, (r, lo, hi) in worst.items()}},
        "signatures": []}))


def test_a_check_run_says_why_a_cache_s_factors_are_not_kept(tmp_path: Path) -> None:
    """A cache whose factor no signature can have gives the run no factor of that suite,
    and says why (a check's note, `qprof adversary`'s warning); a missing one says
    nothing; the other suites' factors are kept."""
    from qprof.measure.preflight import adversary_records

    _cache_of("SLH-DSA-SHAKE-256s", {"ground": (0.5, 0.45, 0.55)})
    _cache_of("SLH-DSA-SHAKE-128s", {"ground": (1.06, 1.05, 1.08)})
    kept = adversary_records("r1", ["ML-DSA-87", "SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-256s"])
    assert [(r.suite, r.kind, r.factor) for r in kept.records] == [
        ("SLH-DSA-SHAKE-128s", "ground", 1.06)]
    [why] = kept.unreadable
    assert why.startswith("SLH-DSA-SHAKE-256s's worst-signature factor is not used")
    assert "below 1" in why


def test_finding_2_a_factor_below_1_never_judges_a_signature_below_the_median(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 49 finding 2: a cached ground factor of 0.5 judged a profile held to the worst
    signature at half its median ("covered: worst signature 4077" for a median of 8154).
    Below 1 it is refused with a warning, or taken as 1 where its interval reaches 1; a
    factor beyond what any signature can cost is refused too."""
    from qprof.consensus.adversarial import load_factors

    run, held = _run_with_factors(tmp_path), _held_profile(tmp_path)
    _cache_of("SLH-DSA-SHAKE-256s", {"ground": (0.5, 0.45, 0.55)})
    _cache_of("SLH-DSA-SHAKE-128s", {"ground": (0.5, 0.45, 1.02)})
    with caplog.at_level("WARNING"):
        assert load_factors("SLH-DSA-SHAKE-256s") == {}
    assert "below 1" in caplog.text and "summary.worst.ground.ratio" in caplog.text
    assert load_factors("SLH-DSA-SHAKE-128s")["ground"].factor == 1.0
    # A pool's costliest of 4 read 1-3 % under its median in a loaded CI run: noise, as 1
    # (refused, it had taken every factor of the run with it).
    _cache_of("SLH-DSA-SHAKE-128s", {"costliest": (0.98, 0.965, 0.99),
                                     "ground": (1.06, 1.05, 1.08)})
    got = load_factors("SLH-DSA-SHAKE-128s")
    assert (got["costliest"].factor, got["ground"].factor) == (1.0, 1.06)
    for suite, r in [(r.suite, r) for r in evaluate(load_profile(held),
                                                    read_run(run).measurements)]:
        if suite in SLH and r.worst_signature is not None:
            assert r.worst_signature.vu >= r.worst_signature.median_vu
            assert r.worst_signature.vu_ci[1] >= r.vu_ci_high
    for absurd in [(2.5, 2.4, 2.6), (1.2, 1.1, 3.5), (1.2, 1.3, 1.4), (1.2, -1.0, 1.3)]:
        _cache_of("SLH-DSA-SHAKE-256s", {"ground": absurd})
        assert load_factors("SLH-DSA-SHAKE-256s") == {}, absurd
    # ML-DSA's crafted rejections can fail early: below 1 is theirs to have.
    _cache_of("ML-DSA-44", {"crafted_invalid": (0.904, 0.9, 0.91)})
    assert load_factors("ML-DSA-44")["crafted_invalid"].factor == 0.904
    # The finding's input through the command: the 0.5 cache under `check --from`.
    import subprocess
    import sys

    _cache_of("SLH-DSA-SHAKE-256s", {"ground": (0.5, 0.45, 0.55)})
    done = subprocess.run([sys.executable, "-m", "qprof", "check", "--from", str(run),
                           "--profile", str(held), "--json"], capture_output=True,
                          text=True, timeout=300)
    clean_exit(done.returncode, done.stdout, done.stderr)
    assert "below 1" in done.stderr, done.stderr


def test_one_refused_kind_keeps_the_others(tmp_path: Path) -> None:
    """A pool's costliest of 4 read at 0.93 of its median on a loaded host (refused: no
    valid signature costs less than the median one): the run's ground and crafted factors
    are kept and used, the costliest's refusal said (before, the whole cache was dropped
    and `qprof history` showed no factor of the suite)."""
    from qprof.consensus.adversarial import load_factors
    from qprof.measure.preflight import adversary_records

    _cache_of("SLH-DSA-SHAKE-128s", {"costliest": (0.93, 0.92, 0.94),
                                     "ground": (1.06, 1.05, 1.08),
                                     "crafted_invalid": (1.2, 1.1, 1.3)})
    kept = adversary_records("r1", ["SLH-DSA-SHAKE-128s"])
    assert sorted(r.kind for r in kept.records) == ["crafted_invalid", "ground"]
    [why] = kept.unreadable
    assert "costliest" in why and "below 1" in why
    assert sorted(load_factors("SLH-DSA-SHAKE-128s")) == ["crafted_invalid", "ground"]


def test_a_factor_taken_as_1_reads_back_from_its_record(tmp_path: Path) -> None:
    """A pool's costliest of 4 read under its median (0.97, 95 % 0.963-0.976, a CI run
    of `qprof adversary`): taken as 1, its interval holds 1, so the record a run keeps
    reads back; before, the record said 1 over 0.963-0.976 and `qprof history` called
    the whole store damaged. Records kept that way still read."""
    import json as json_

    from qprof.measure.preflight import adversary_records
    from qprof.measure.records import record_from_dict

    _cache_of("SLH-DSA-SHAKE-128s", {"costliest": (0.97, 0.963314, 0.97554)})
    [kept] = adversary_records("r1", ["SLH-DSA-SHAKE-128s"]).records
    assert (kept.factor, kept.low, kept.high) == (1.0, 0.963314, 1.0)
    back = record_from_dict(json_.loads(kept.to_json()))
    assert isinstance(back, AdversaryFactors) and (back.factor, back.high) == (1.0, 1.0)
    old = json_.loads(kept.to_json()) | {"high": 0.97554}
    before = record_from_dict(old)
    assert isinstance(before, AdversaryFactors) and (before.factor, before.high) == (1.0, 1.0)


@pytest.mark.parametrize("factor", [(0.1, 0.09, 0.11), (-5.0, -6.0, -4.0), (0.0, 0.0, 0.0),
                                    (40.0, 39.0, 41.0)])
def test_finding_5_calibrate_ground_ignores_an_impossible_factor_with_a_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        factor: tuple[float, float, float]) -> None:
    """Issue 49 finding 5: a run's adversary record with factor 0.1 took the proposal from
    8302 to 831 ("SLH-DSA constants cover the worst valid signature"); -5 wrote a negative
    constant, exit 0. The record is refused (a warning naming it), the node is named as
    lacking that factor, and its median figure stays."""
    run = _run_with_factors(tmp_path)
    lines = run.read_text().splitlines()
    bad = [json.dumps({**json.loads(line), "factor": factor[0], "low": factor[1],
                       "high": factor[2]})
           if '"adversary"' in line and "SLH-DSA-SHAKE-256s" in line and '"ground"' in line
           else line for line in lines]
    assert bad != lines
    run.write_text("\n".join(bad) + "\n")
    code = main(["calibrate", str(run), "--headroom", "ground", "--json"])
    seen = capsys.readouterr()
    clean_exit(code, seen.out, seen.err)
    out = json.loads(seen.out)
    assert code in (0, 1)
    assert any("adversary record SLH-DSA-SHAKE-256s ground" in p for p in out["problems"])
    assert any("SLH-DSA-SHAKE-256s" in n for n in out["headroom_lacking"])
    median = main(["calibrate", str(run), "--headroom", "median", "--json"])
    assert median in (0, 1)
    plain = json.loads(capsys.readouterr().out)
    assert out["constants"]["SLH-DSA-SHAKE-256s"] == plain["constants"]["SLH-DSA-SHAKE-256s"]
    assert all(v > 0 for v in out["constants"].values())


def test_calibrate_ground_on_one_x86_nodes_runs_proposes_for_the_reference_cores(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 52 item 1: the three recorded runs of one x86 guest (qanum's ratio binds on
    none of its CPUs), the newest with one adversary run's factors: one node, and SLH-DSA
    constants projected from qanum's Silver medians with the ground factor, named so."""
    runs = []
    for i, xz in enumerate(sorted(RUNS.glob("*.jsonl.xz"))):
        path = tmp_path / f"run{i}.jsonl"
        path.write_bytes(lzma.decompress(xz.read_bytes()))
        runs.append(path)
    runs[-1] = _run_with_factors(tmp_path)  # the newest run, as written after `adversary`
    assert main(["calibrate", *map(str, runs), "--headroom", "ground", "--json"]) in (0, 1)
    out = json.loads(capsys.readouterr().out)
    assert out["nodes"] == ["vm"]  # three runs of one machine: one node
    profile = load_profile("qanum")
    (silver,) = [c for c in profile.reference_cores if c.name == "Silver"]
    unit = silver.verify_median_ns[profile.unit_suite]
    for s in out["suites"]:
        if s["suite"] not in SLH:
            assert s["proposed"] == s["current"] and not s["projected"]
            continue
        ratio = silver.verify_median_ns[s["suite"]] / unit
        want = math.ceil(100 * ratio * FACTORS[s["suite"]]["ground"][2] - 1e-9)
        assert s["projected"] and s["proposed"] == want > s["current"]
        assert s["note"].startswith("projected from qanum's Silver medians "
                                    f"({math.ceil(100 * ratio - 1e-9)}) with the ground valid "
                                    "factor measured on 1 node")
    main(["calibrate", *map(str, runs), "--headroom", "ground"])
    text = capsys.readouterr().out
    assert text.startswith("calibrate qanum from 1 node(s): vm\n")
    assert re.search(r"^SUITE +CURRENT +PROPOSED +CHANGE +WHY$", text, re.M)
    assert re.search(r"^SLH-DSA-SHAKE-128s +1600 +\d+ +\+\d+ +projected from qanum's Silver",
                     text, re.M)
    assert "2 suite(s) projected on the reference cores" in " ".join(text.split())
    assert max(len(line) for line in text.splitlines()) <= 100
    # Without a factor, the median headroom keeps the constants and says where from.
    main(["calibrate", *map(str, runs[:2]), "--headroom", "ground", "--json"])
    kept = {s["suite"]: s for s in json.loads(capsys.readouterr().out)["suites"]}
    assert kept["SLH-DSA-SHAKE-128s"]["proposed"] == 1600
    assert "qanum's Silver medians give 1576" in kept["SLH-DSA-SHAKE-128s"]["note"]
