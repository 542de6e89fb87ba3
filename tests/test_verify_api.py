"""qprof.verify interface: names, errors, availability reasons, never-raise verify, KEM."""

from __future__ import annotations

import _ctypes
import json
import os
import shutil
from pathlib import Path

import pytest

from qprof.verify import (
    BACKEND_NAMES,
    KEMS,
    SUITES,
    BackendUnavailable,
    SuiteNotSupported,
    UnknownBackendError,
    UnknownSuiteError,
    available_backends,
    find_liboqs,
    get_kem,
    get_signer,
    get_verifier,
)
from qprof.verify.availability import LIBOQS_INSTALL_HINT

EXPECTED_SUITES = [
    "ML-DSA-44", "ML-DSA-65", "ML-DSA-87",
    "SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-128f", "SLH-DSA-SHAKE-192s",
    "SLH-DSA-SHAKE-192f", "SLH-DSA-SHAKE-256s", "SLH-DSA-SHAKE-256f",
]  # fmt: skip


def test_suite_registry_names_and_sizes() -> None:
    assert list(SUITES) == EXPECTED_SUITES
    assert SUITES["ML-DSA-44"].pk_size == 1312 and SUITES["ML-DSA-44"].sig_size == 2420
    assert SUITES["ML-DSA-87"].sig_size == 4627
    assert SUITES["SLH-DSA-SHAKE-128s"].liboqs_name == "SLH_DSA_PURE_SHAKE_128S"
    assert SUITES["SLH-DSA-SHAKE-256f"].sig_size == 49856
    assert {s.family for s in SUITES.values()} == {"ML-DSA", "SLH-DSA"}
    assert KEMS["ML-KEM-1024"].ct_size == 1568
    json.dumps([s.to_dict() for s in SUITES.values()])  # JSON-able


def test_unknown_backend_lists_known_ones() -> None:
    with pytest.raises(UnknownBackendError) as err:
        get_verifier("bogus", "ML-DSA-44")
    assert isinstance(err.value, ValueError)
    for name in BACKEND_NAMES:
        assert name in str(err.value)


def test_unknown_suite_lists_known_ones() -> None:
    with pytest.raises(UnknownSuiteError) as err:
        get_verifier("rustcrypto", "ML-DSA-42")
    assert isinstance(err.value, ValueError)
    for name in EXPECTED_SUITES:
        assert name in str(err.value)
    with pytest.raises(UnknownSuiteError):
        get_signer("rustcrypto", "Dilithium2")


def test_unknown_kem_and_backend() -> None:
    with pytest.raises(UnknownSuiteError, match="ML-KEM-1024"):
        get_kem("liboqs", "Kyber512")
    with pytest.raises(UnknownBackendError):
        get_kem("bogus")
    with pytest.raises(ValueError, match="no KEM"):
        get_kem("openssl")


@pytest.mark.fresh
def test_available_backends_shape_and_cache() -> None:
    statuses = available_backends()
    assert list(statuses) == list(BACKEND_NAMES)
    for name, status in statuses.items():
        assert status.name == name
        assert isinstance(status.reason, str) and status.reason
        if status.available:
            assert status.reason == "ok"
            assert status.suites and set(status.suites) <= set(SUITES)
        else:
            assert status.reason.startswith(f"{name}:")
            assert status.suites == ()
        json.dumps(status.to_dict())
    again = available_backends()
    assert all(again[n] is statuses[n] for n in statuses)  # cached


@pytest.mark.fresh
def test_liboqs_not_found_reason_is_stable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: tmp_path / "home"))
    monkeypatch.setattr("ctypes.util.find_library", lambda name: None)
    reason = find_liboqs({"OQS_INSTALL_PATH": str(tmp_path / "nowhere")})
    assert isinstance(reason, str)
    assert reason.startswith("liboqs: shared library not found")
    assert reason.endswith(LIBOQS_INSTALL_HINT)
    assert "OQS_INSTALL_PATH" in reason and "~/_oqs" in reason


@pytest.mark.fresh
def test_liboqs_versioned_only_is_not_enough(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # liboqs-python only loads lib/liboqs.so; a lone liboqs.so.9 would make it rebuild.
    lib = tmp_path / "oqs" / "lib"
    lib.mkdir(parents=True)
    shutil.copyfile(_ctypes.__file__, lib / "liboqs.so.9")  # an ELF shared object
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: tmp_path / "home"))
    monkeypatch.setattr("ctypes.util.find_library", lambda name: None)
    reason = find_liboqs({"OQS_INSTALL_PATH": str(tmp_path / "oqs")})
    assert isinstance(reason, str) and "no liboqs.so symlink" in reason
    (lib / "liboqs.so").symlink_to("liboqs.so.9")
    found = find_liboqs({"OQS_INSTALL_PATH": str(tmp_path / "oqs")})
    assert not isinstance(found, str)
    assert found.install_dir == tmp_path / "oqs" and found.source == "OQS_INSTALL_PATH"
    assert found.env_skipped is None


@pytest.mark.fresh
def test_ignored_oqs_install_path_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # OQS_INSTALL_PATH points nowhere but ~/_oqs has a build: qprof uses that one and
    # says so, rather than silently measuring a library the user did not ask for.
    lib = tmp_path / "home" / "_oqs" / "lib"
    lib.mkdir(parents=True)
    shutil.copyfile(_ctypes.__file__, lib / "liboqs.so")  # an ELF shared object
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: tmp_path / "home"))
    found = find_liboqs({"OQS_INSTALL_PATH": str(tmp_path / "typo")})
    assert not isinstance(found, str) and found.source == "~/_oqs"
    assert found.env_skipped == f"no liboqs.so in {tmp_path / 'typo'}/lib or lib64"
    assert find_liboqs({}).env_skipped is None  # type: ignore[union-attr]


@pytest.mark.fresh
def test_unavailable_suite_raises_suite_not_supported() -> None:
    status = available_backends()["openssl"]
    if not status.available:
        pytest.skip(status.reason)
    with pytest.raises(SuiteNotSupported) as err:
        get_verifier("openssl", "SLH-DSA-SHAKE-128f")
    assert isinstance(err.value, BackendUnavailable)
    assert "ML-DSA-44" in str(err.value)


def _usable(backend: str, suite: str) -> bool:
    status = available_backends()[backend]
    return status.available and suite in status.suites


JUNK: list[tuple[object, object, object, object]] = [
    (b"", b"", b"", b""),
    (None, b"m", b"s", b""),
    ("text", "text", "text", ""),
    (12, 3.5, [], {}),
    (b"\x00" * 1312, b"m", b"\x00" * 2420, b"x" * 256),
]


@pytest.mark.fresh
@pytest.mark.parametrize("backend", BACKEND_NAMES)
def test_verify_never_raises_on_junk(backend: str) -> None:
    if not _usable(backend, "ML-DSA-44"):
        pytest.skip(f"{backend} cannot verify ML-DSA-44 here")
    verifier = get_verifier(backend, "ML-DSA-44")
    for pk, msg, sig, ctx in JUNK:
        assert verifier.verify(pk, msg, sig, ctx) is False  # type: ignore[arg-type]
    # bytes-like inputs are accepted as bytes
    assert verifier.verify(bytearray(1312), memoryview(b"m"), bytearray(2420)) is False


@pytest.mark.fresh
def test_numba_hot_path_compiles_nothing_after_warm_up() -> None:
    # Issue 3: "nothing compiles on the hot path". Every suite and every accepted input
    # type (bytearray, memoryview, any context length) must reuse the one
    # specialisation per family that warm_up loaded.
    if not _usable("numba", "ML-DSA-44"):
        pytest.skip("numba backend unavailable here")
    from qprof.verify import warm_up
    from qprof.verify.nb import mldsa, slhdsa_kernels

    verifiers = [warm_up("numba", suite) for suite in SUITES]
    kernels = (mldsa._verify_kernel, slhdsa_kernels.verify_kernel)
    compiled = [len(k.signatures) for k in kernels]
    for v in verifiers:
        pk, sig = bytes(v.suite.pk_size), bytes(v.suite.sig_size)
        assert v.verify(pk, b"m", sig) is False
        assert v.verify(bytearray(pk), memoryview(b"msg"), bytearray(sig), b"c" * 255) is False
    assert [len(k.signatures) for k in kernels] == compiled


def test_reasons_for_unavailable_backend_raise(monkeypatch: pytest.MonkeyPatch) -> None:
    from qprof.verify import BackendStatus, availability

    fake = BackendStatus("liboqs", False, "liboqs: shared library not found (test)")
    monkeypatch.setattr(availability, "_probe", lambda name: fake)
    with pytest.raises(BackendUnavailable, match="shared library not found"):
        get_verifier("liboqs", "ML-DSA-44")


def test_kem_roundtrip(liboqs_available: None) -> None:
    kem = get_kem("liboqs", "ML-KEM-1024")
    pk, sk = kem.keypair()
    assert len(pk) == 1568 and len(sk) == 3168
    ct, ss = kem.encaps(pk)
    assert len(ct) == 1568 and len(ss) == 32
    assert kem.decaps(sk, ct) == ss
    tampered = bytes([ct[0] ^ 1]) + ct[1:]
    assert kem.decaps(sk, tampered) != ss  # implicit rejection
    with pytest.raises(ValueError):
        kem.encaps(pk[:-1])


def test_backends_command_json(capsys: pytest.CaptureFixture[str]) -> None:
    from qprof.cli import main

    assert main(["backends", "--json"]) in (0, 1)
    data = json.loads(capsys.readouterr().out)
    assert list(data) == list(BACKEND_NAMES)
    assert main(["backends"]) in (0, 1)
    table = capsys.readouterr().out
    for name in BACKEND_NAMES:
        assert name in table


def test_oqs_import_does_not_print(liboqs_available: None) -> None:
    # liboqs-python logs to stdout on import; qprof filters it (JSON output stays clean).
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", "from qprof.verify import get_verifier;"
         "get_verifier('liboqs', 'ML-DSA-44')"],
        capture_output=True, text=True, env=dict(os.environ), check=True,
    )
    assert out.stdout == ""


@pytest.mark.fresh
def test_verify_bench_smoke() -> None:
    # Structure only (tests never assert timings): one suite, two rounds, tiny batches.
    from qprof.commands.verify_bench import format_table, run_verify_bench

    usable = [b for b in ("liboqs", "rustcrypto") if _usable(b, "ML-DSA-44")]
    if not usable:
        pytest.skip("neither liboqs nor rustcrypto can verify ML-DSA-44 here")
    before = os.sched_getaffinity(0)
    cpu, results = run_verify_bench(
        suites=["ML-DSA-44"], backends=usable, rounds=2, round_ms=0.2
    )
    assert os.sched_getaffinity(0) == before  # affinity restored
    assert cpu in before
    (result,) = results
    assert result.baseline == usable[0]
    assert [t.backend for t in result.timings] == usable
    assert all(t.median_ns and t.rounds == 2 and not t.problem for t in result.timings)
    assert "ML-DSA-44" in format_table(cpu, results)
    with pytest.raises(ValueError, match="known backends"):
        run_verify_bench(backends=["nope"])


@pytest.mark.fresh
def test_missing_liboqs_never_imports_oqs(tmp_path: Path) -> None:
    # Importing liboqs-python without the library makes it git-clone and build liboqs;
    # qprof must report "unavailable" instead and leave `oqs` unimported.
    import ctypes.util
    import subprocess
    import sys

    if ctypes.util.find_library("oqs"):
        pytest.skip("a system-wide liboqs is installed; cannot simulate its absence")
    env = {k: v for k, v in os.environ.items() if k != "OQS_INSTALL_PATH"}
    env["HOME"] = str(tmp_path)
    code = (
        "import sys, json\n"
        "from qprof.verify import available_backends, get_verifier, BackendUnavailable\n"
        "s = available_backends()['liboqs']\n"
        "try:\n"
        "    get_verifier('liboqs', 'ML-DSA-44'); raised = False\n"
        "except BackendUnavailable as e:\n"
        "    raised = str(e) == s.reason\n"
        "print(json.dumps([s.available, s.reason, 'oqs' in sys.modules, raised]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True, timeout=120)
    available, reason, imported, raised = json.loads(out.stdout.strip().splitlines()[-1])
    assert available is False and imported is False and raised is True
    assert reason.startswith("liboqs: shared library not found")
