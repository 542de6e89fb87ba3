"""Shared pytest fixtures (keep this small and generic; put specific fixtures in the
test file that uses them)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DIR = REPO_ROOT.parent / "shared"  # read-only data beside the repo, never copied in


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """``../shared`` (corpus, test vectors); skips the test when it is absent."""
    if not SHARED_DIR.is_dir():
        pytest.skip(f"shared data directory {SHARED_DIR} is absent")
    return SHARED_DIR


@pytest.fixture(scope="session")
def liboqs_available() -> None:
    """Skip unless the liboqs backend works here (reason names what is missing)."""
    from qprof.verify import backend_status

    status = backend_status("liboqs")
    if not status.available:
        pytest.skip(status.reason)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that can skip for want of liboqs is a fresh-machine test (marker ``fresh``;
    tests/test_ci_selection.py checks the others that are marked by hand)."""
    for item in items:
        if "liboqs_available" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.fresh)


HW_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hw"


@pytest.fixture
def seeds(tmp_path: Path) -> Path:
    """A writable copy of the seeds' big.LITTLE machine (Gold capped 2.42 -> 1.08 GHz)."""
    root = tmp_path / "seeds"
    shutil.copytree(HW_FIXTURES / "seeds-arm", root)
    return root


@pytest.fixture(autouse=True)
def _no_adversary_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Verdicts show a worst-signature figure from the last `qprof adversary` run kept
    in the user's cache; tests start without one (so they do not depend on this host)."""
    monkeypatch.setenv("QPROF_ADVERSARY_DIR", str(tmp_path / "adversary-runs"))


@pytest.fixture(autouse=True)
def _own_state_dir(monkeypatch: pytest.MonkeyPatch,
                   tmp_path_factory: pytest.TempPathFactory) -> None:
    """`qprof check` keeps every run in the user's store (the state dir); each test has
    its own (beside its tmp_path, which some tests list), so no test judges another's
    runs."""
    monkeypatch.delenv("STATE_DIRECTORY", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("xdg-state")))


@pytest.fixture(autouse=True)
def _small_signature_pools(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run signs 256 SLH-DSA signatures per suite once (minutes, then cached); tests
    with an empty cache sign pools of 8 (qprof.measure.fixtures.POOL_SIZE_ENV)."""
    monkeypatch.setenv("QPROF_POOL_SIZE", "8")


@pytest.fixture(autouse=True)
def _own_machine_lock(monkeypatch: pytest.MonkeyPatch,
                      tmp_path_factory: pytest.TempPathFactory) -> None:
    """Real measurements take qprof's machine lock; each pytest process (an xdist worker)
    has its own, so no bounded wait of a test sits behind another worker's or another qprof
    run's measurement on this host (a daemon, another checkout's tests)."""
    lock_dir = tmp_path_factory.getbasetemp() / "machine-lock"
    lock_dir.mkdir(mode=0o700, exist_ok=True)
    monkeypatch.setenv("QPROF_LOCK_DIR", str(lock_dir))
