"""The functional check before timing (issue 32): shipped known answers, a broken liboqs
seen as MISMATCH and never decided, the daemon's functional_mismatch alert.

The broken liboqs is a real one behind a tiny wrapper library compiled here with cc: a
``liboqs.so`` that needs the real ``liboqs.so.9`` and defines ``OQS_SIG_verify`` and
``OQS_SIG_verify_with_ctx_str`` itself, flipping their result for ML-DSA-87 only
(every other symbol resolves to the real library). ``OQS_INSTALL_PATH`` points qprof at it.
"""

from __future__ import annotations

import dataclasses
import json
import lzma
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hostile_exit import clean_exit

from qprof.consensus import load_profile
from qprof.consensus.verdict import evaluate
from qprof.measure.records import FunctionalCheck, Measurement
from qprof.service.cycle import CycleRunner
from qprof.verify.vectors import shipped_cases

RUNS = Path(__file__).resolve().parent / "data" / "runs"
HW = Path(__file__).resolve().parent / "fixtures" / "hw"
BROKEN = "ML-DSA-87"
WRAPPER_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
typedef struct { const char *method_name; } sig_head;  /* OQS_SIG's first field */
typedef int (*verify_ctx_fn)(const void *, const uint8_t *, size_t, const uint8_t *, size_t,
                             const uint8_t *, size_t, const uint8_t *);
typedef int (*verify_fn)(const void *, const uint8_t *, size_t, const uint8_t *, size_t,
                         const uint8_t *);
static void *real(const char *name) {
    void *lib = dlopen("liboqs.so.9", RTLD_NOW | RTLD_NOLOAD);
    return lib ? dlsym(lib, name) : NULL;
}
static int flip(const void *sig, int rc) {
    return strcmp(((const sig_head *)sig)->method_name, "%s") == 0 ? (rc == 0 ? -1 : 0) : rc;
}
int OQS_SIG_verify_with_ctx_str(const void *sig, const uint8_t *m, size_t ml,
                                const uint8_t *s, size_t sl, const uint8_t *c, size_t cl,
                                const uint8_t *pk) {
    verify_ctx_fn f = (verify_ctx_fn)real("OQS_SIG_verify_with_ctx_str");
    return flip(sig, f(sig, m, ml, s, sl, c, cl, pk));
}
int OQS_SIG_verify(const void *sig, const uint8_t *m, size_t ml, const uint8_t *s,
                   size_t sl, const uint8_t *pk) {
    verify_fn f = (verify_fn)real("OQS_SIG_verify");
    return flip(sig, f(sig, m, ml, s, sl, pk));
}
"""


@pytest.mark.parametrize("suite", ["ML-DSA-44", "ML-DSA-87", "SLH-DSA-SHAKE-128s",
                                   "SLH-DSA-SHAKE-256s"])
def test_known_answers_are_shipped_in_the_package(suite: str) -> None:
    """No ../shared on a user's machine: the vectors come from the package, valid and
    invalid ones."""
    cases = shipped_cases(suite)
    assert {c.expected for _tag, c in cases} == {True, False}
    assert all(c.suite == suite for _tag, c in cases)


def _broken_liboqs(tmp: Path) -> Path:
    """An install dir whose lib/liboqs.so flips ML-DSA-87's verify (skips without cc)."""
    from qprof.verify.availability import find_liboqs

    where = find_liboqs()
    cc = shutil.which("cc") or shutil.which("gcc")
    if isinstance(where, str) or cc is None:
        pytest.skip(where if isinstance(where, str) else "no C compiler (cc)")
    real_dir = Path(os.path.realpath(where.library)).parent
    if not (real_dir / "liboqs.so.9").exists():
        pytest.skip(f"no liboqs.so.9 in {real_dir} (another liboqs ABI)")
    src = tmp / "wrap.c"
    src.write_text(WRAPPER_C.replace("%s", BROKEN))
    (tmp / "broken" / "lib").mkdir(parents=True)
    lib = tmp / "broken" / "lib" / "liboqs.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(lib), str(src),
                    f"-L{real_dir}", "-Wl,--no-as-needed", "-l:liboqs.so.9",
                    f"-Wl,-rpath,{real_dir}", "-ldl"],
                   check=True, capture_output=True)
    return tmp / "broken"


def _check(install: Path, cache: Path, *extra: str) -> tuple[int, dict[str, object]]:
    env = {**os.environ, "OQS_INSTALL_PATH": str(install), "QPROF_CACHE_DIR": str(cache),
           "QPROF_POOL_SIZE": "4"}
    proc = subprocess.run(
        [sys.executable, "-m", "qprof", "check", "--json", "--cpus", "0", "--rounds", "3",
         "--max-rounds", "3", "--time-limit", "2", "--budget", "0.02", "--timer", "cpu",
         *extra], capture_output=True, text=True, env=env, timeout=600)
    return proc.returncode, json.loads(proc.stdout)


def test_broken_liboqs_is_mismatch_and_never_decided(tmp_path_factory: pytest.TempPathFactory,
                                                      liboqs_available: None) -> None:
    tmp = tmp_path_factory.mktemp("broken-oqs")
    install = _broken_liboqs(tmp)
    cache = tmp_path_factory.getbasetemp() / "qprof-cache"
    code, out = _check(install, cache)
    checks = {c["suite"]: c for c in out["functional"]}  # type: ignore[union-attr]
    assert checks[BROKEN]["status"] == "MISMATCH"
    assert any("second:" in f for f in checks[BROKEN]["failed"])
    # NIST's ML-DSA-87 cases among them, named by source and case.
    assert any(f.startswith("acvp ML-DSA-sigVer-FIPS204 tg5 tc") for f in checks[BROKEN]["failed"])
    assert "acvp" in checks[BROKEN]["sources"]
    assert all(c["status"] == "PASS" for s, c in checks.items() if s != BROKEN)
    # check --json carries the memory per operation of every suite measured, too.
    memory = {(r["suite"], r["operation"]) for r in out["resources"]}  # type: ignore[union-attr]
    assert ("SLH-DSA-SHAKE-256s", "verify") in memory
    # Not timed, so no verdict for it; and the run is not "covered" for lack of it.
    assert BROKEN not in {r["suite"] for r in out["results"]}  # type: ignore[union-attr]
    assert out["decision"] != "covered" and code == 3
    # Timed under --allow-mismatch: shown, never decided.
    code, out = _check(install, cache, "--allow-mismatch")
    row = next(r for r in out["results"] if r["suite"] == BROKEN)  # type: ignore[union-attr]
    assert row["decision"] == "no_estimate" and row["covered"] is None
    assert "MISMATCH" in row["undecided"]
    assert next(c for c in out["functional"] if c["suite"] == BROKEN)["cached"]  # type: ignore[union-attr]


def _recorded_measurements(tmp: Path) -> list[Measurement]:
    from qprof.measure.jsonl import read_run

    path = tmp / "run.jsonl"
    path.write_bytes(lzma.decompress(sorted(RUNS.glob("*.jsonl.xz"))[0].read_bytes()))
    return read_run(path).measurements


def test_a_mismatched_suite_or_unit_is_undecided_in_the_verdict(tmp_path: Path) -> None:
    """consensus.functional: the suite's estimate undecided with the reason; a mismatched
    unit leaves every suite of that CPU and backend undecided."""
    profile = load_profile("qanum")
    ms = _recorded_measurements(tmp_path)
    why = "functional check MISMATCH: liboqs gave 2 wrong answer(s)"
    marked = [dataclasses.replace(m, functional_mismatch=why)
              if m.suite == "SLH-DSA-SHAKE-256s" else m for m in ms]
    results = evaluate(profile, marked, replicates=50)
    slh = [r for r in results if r.suite == "SLH-DSA-SHAKE-256s"]
    assert slh and all(r.decision == "no_estimate" and r.covered is None for r in slh)
    assert all(why in (r.estimate.undecided or "") for r in slh)
    others = [r for r in results if r.suite == "ML-DSA-87"]
    assert all(r.estimate.undecided is None or why not in r.estimate.undecided
               for r in others)
    unit = [dataclasses.replace(m, functional_mismatch=why) if m.suite == "ML-DSA-44" else m
            for m in ms]
    judged = [r for r in evaluate(profile, unit, replicates=50) if not r.estimate.is_unit]
    assert judged and all(r.decision == "no_estimate" for r in judged)


def test_daemon_alerts_functional_mismatch(tmp_path: Path) -> None:
    """A MISMATCH record in a cycle: the critical alert at once, and the metric at 0."""
    from qprof.service.alerts import Alert, AlertDispatcher
    from qprof.service.config import DaemonConfig
    from qprof.service.metrics import MetricsState
    from qprof.service.store import Store

    alerts: list[Alert] = []
    state = MetricsState(profile=load_profile("qanum"))
    r = CycleRunner(DaemonConfig(root=HW / "seeds-arm"), Store(tmp_path / "qprof.db"),
                    AlertDispatcher([alerts.append]), state, "liboqs",
                    capped_now=lambda: {}, online_now=lambda cpu: True)
    r._sink(FunctionalCheck(run_id="r1", backend="liboqs", suite=BROKEN, status="MISMATCH",
                            cases=5, failed=["second:rustcrypto valid: expected valid, got "
                                             "invalid"], sources=["second"]))
    r._sink(FunctionalCheck(run_id="r1", backend="liboqs", suite="ML-DSA-44", status="PASS",
                            cases=34, sources=["wycheproof", "second"]))
    got = [a for a in alerts if a.kind == "functional_mismatch"]
    assert len(got) == 1 and got[0].severity == "critical" and BROKEN in got[0].message
    # The next cycle's run finds it again (cached for that build): no second alert.
    r._sink(FunctionalCheck(run_id="r2", backend="liboqs", suite=BROKEN, status="MISMATCH",
                            cases=5, failed=["x"], cached=True))
    assert len([a for a in alerts if a.kind == "functional_mismatch"]) == 1
    from prometheus_client import CollectorRegistry, generate_latest

    from qprof.service.metrics import QprofCollector

    registry = CollectorRegistry(auto_describe=False)
    registry.register(QprofCollector(state, {"version": "t"}))
    text = generate_latest(registry).decode()
    assert f'qprof_functional_check_pass{{backend="liboqs",suite="{BROKEN}"}} 0.0' in text
    assert 'qprof_functional_check_pass{backend="liboqs",suite="ML-DSA-44"} 1.0' in text


TWO_SUITES = """
name = "two"
unit_suite = "ML-DSA-44"
verifier = "liboqs"
max_block_verify_units = 200000
[verify_units]
"ML-DSA-44" = 100
"ML-DSA-87" = 290
"""


def test_finding_3_a_pool_signature_the_backend_refuses_is_never_decided(
        tmp_path: Path, liboqs_available: None) -> None:
    """Issue 49 finding 3: on load only pool entries 0, 8, 16 and 24 of 32 were verified;
    with the other 28 ML-DSA-87 signatures cut short check printed "ML-DSA-87 244 ns
    covered", exit 0, beside "2625 of 3000 verdicts were wrong". Every timed verify's
    verdict counts now: a wrong one leaves the suite undecided."""
    cache = tmp_path / "cache"
    (cache / "fixtures").mkdir(parents=True)
    signed = subprocess.run([sys.executable, "-m", "qprof.measure.fixtures", "ML-DSA-87",
                             "32", "liboqs"], capture_output=True, text=True, check=True,
                            timeout=300).stdout.splitlines()
    pool = [json.loads(line) for line in signed]
    for i, fx in enumerate(pool):
        if i % 8:  # what the load check does not look at: cut short
            fx["signature"] = fx["signature"][:200]
    (cache / "fixtures" / "ML-DSA-87.pool256.json").write_text(json.dumps(pool))
    profile = tmp_path / "two.toml"
    profile.write_text(TWO_SUITES)
    env = {**os.environ, "QPROF_CACHE_DIR": str(cache)}
    proc = subprocess.run(
        [sys.executable, "-m", "qprof", "check", "--json", "--profile", str(profile),
         "--cpus", "0", "--rounds", "3", "--max-rounds", "3", "--time-limit", "2",
         "--budget", "0.02", "--timer", "cpu"], capture_output=True, text=True, env=env,
        timeout=600)
    clean_exit(proc.returncode, proc.stdout, proc.stderr)
    out = json.loads(proc.stdout)
    row = next(r for r in out["results"] if r["suite"] == "ML-DSA-87")
    assert row["covered"] is None and row["decision"] != "covered", row
    assert "wrong verdict" in row["undecided"]
    assert out["decision"] != "covered" and proc.returncode != 0
    unit = next(r for r in out["results"] if r["suite"] == "ML-DSA-44")
    assert not unit.get("undecided")


ABORT_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
typedef struct { const char *method_name; } sig_head;  /* OQS_SIG's first field */
typedef int (*verify_ctx_fn)(const void *, const uint8_t *, size_t, const uint8_t *, size_t,
                             const uint8_t *, size_t, const uint8_t *);
int OQS_SIG_verify_with_ctx_str(const void *sig, const uint8_t *m, size_t ml,
                                const uint8_t *s, size_t sl, const uint8_t *c, size_t cl,
                                const uint8_t *pk) {
    void *lib = dlopen("liboqs.so.9", RTLD_NOW | RTLD_NOLOAD);
    verify_ctx_fn f = (verify_ctx_fn)dlsym(lib, "OQS_SIG_verify_with_ctx_str");
    if (cl > 0 && strcmp(((const sig_head *)sig)->method_name, "ML-DSA-87") == 0)
        abort();  /* a context string: what the known answers use and timing does not */
    return f(sig, m, ml, s, sl, c, cl, pk);
}
"""


def test_finding_4_a_known_answer_check_that_crashed_is_a_mismatch(
        tmp_path: Path, liboqs_available: None) -> None:
    """Issue 49 finding 4: a liboqs whose verify aborts on a context string (timing uses
    none) got "warning: liboqs: preflight: exit -6", no check record, then "ML-DSA-87 ...
    covered", exit 0. A check that did not complete could not vouch for the backend: a
    MISMATCH, not timed; what completed before the crash (ML-DSA-44) is kept."""
    from qprof.verify.availability import find_liboqs

    install = _broken_liboqs(tmp_path)  # its dir, rebuilt below (skips without cc)
    lib = install / "lib" / "liboqs.so"

    where = find_liboqs()
    assert not isinstance(where, str)
    real_dir = Path(os.path.realpath(where.library)).parent
    src = tmp_path / "abort.c"
    src.write_text(ABORT_C)
    subprocess.run([shutil.which("cc") or "gcc", "-shared", "-fPIC", "-O1", "-o", str(lib),
                    str(src), f"-L{real_dir}", "-Wl,--no-as-needed", "-l:liboqs.so.9",
                    f"-Wl,-rpath,{real_dir}", "-ldl"], check=True, capture_output=True)
    profile = tmp_path / "two.toml"
    profile.write_text(TWO_SUITES)
    env = {**os.environ, "OQS_INSTALL_PATH": str(install),
           "QPROF_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-m", "qprof", "check", "--json", "--profile", str(profile),
         "--cpus", "0", "--rounds", "3", "--max-rounds", "3", "--time-limit", "2",
         "--budget", "0.02", "--timer", "cpu"], capture_output=True, text=True, env=env,
        timeout=600)
    clean_exit(proc.returncode, proc.stdout, proc.stderr)
    out = json.loads(proc.stdout)
    checks = {c["suite"]: c for c in out["functional"]}
    assert checks["ML-DSA-87"]["status"] == "MISMATCH", checks
    assert "did not complete" in checks["ML-DSA-87"]["failed"][0]
    assert "exit -6" in checks["ML-DSA-87"]["failed"][0]
    assert checks["ML-DSA-44"]["status"] == "PASS"
    assert "ML-DSA-87" not in {r["suite"] for r in out["results"]}
    assert out["decision"] != "covered" and proc.returncode == 3


# -- issue 49, finding 14: FIFOs in the cache dir never hang a check ------------------------

def test_finding_14_fifos_as_the_functional_caches_do_not_hang_check(
        tmp_path: Path, liboqs_available: None) -> None:
    """The known-answer cache and the second implementation's kept signatures, each a
    FIFO: the check reads past them (checks again, keeps nothing) and decides."""
    from qprof.measure.preflight import build_of, cache_path, cpu_identity
    from qprof.verify.availability import backend_status, find_liboqs

    where = find_liboqs()
    assert not isinstance(where, str), where
    cache = tmp_path / "cache"
    fixtures = cache / "fixtures"
    fixtures.mkdir(parents=True)
    build = build_of("liboqs", backend_status("liboqs"))
    fifos = [cache_path(fixtures, "liboqs", build, cpu_identity()[1])]
    fifos += [fixtures / f"second-rustcrypto-{s}.json"
              for s in ("SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-256s")]
    for fifo in fifos:
        os.mkfifo(fifo)
    if where.install_dir is None:
        pytest.skip("liboqs on the system library path: no install dir to name")
    code, out = _check(Path(where.install_dir), cache)
    checks = out["functional"]
    assert {c["status"] for c in checks} == {"PASS"}  # type: ignore[union-attr]
    assert not any(c["cached"] for c in checks)  # type: ignore[union-attr]
    assert out["decision"] in ("covered", "not_covered", "unsure"), out["decision"]
    assert all(stat.S_ISFIFO(f.lstat().st_mode) for f in fifos)  # left as they were


def test_finding_14_a_fifo_as_grow_lock_does_not_hang(tmp_path: Path) -> None:
    import threading

    from qprof.measure.poolgrow import grower_pid

    os.mkfifo(tmp_path / "grow.lock")
    found: list[int | None] = []
    reader = threading.Thread(target=lambda: found.append(grower_pid(tmp_path)),
                              daemon=True)
    reader.start()
    reader.join(30)
    hung = reader.is_alive()
    if hung:  # let it go: a writer opens the FIFO and closes it
        with open(tmp_path / "grow.lock", "w"):
            pass
    assert not hung
    assert found == [None]  # no grower, and the FIFO left as it was
    assert stat.S_ISFIFO((tmp_path / "grow.lock").lstat().st_mode)
    big = tmp_path / "big"
    big.mkdir()
    (big / "grow.lock").write_bytes(str(os.getpid()).encode() + b" " * (1 << 20))
    assert grower_pid(big) is None  # read bounded: too large is no grower
