"""`qprof setup liboqs`: the pinned release, checked; what to do offline; a real build from
the shared tarball (../shared/vendor, as CI has it) where cmake, ninja and a compiler are.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from qprof.verify import liboqs_build as lb

SHARED_TARBALL = Path(__file__).resolve().parents[2] / "shared" / "vendor" / \
    "liboqs-0.16.0.tar.gz"
SHARED_README = SHARED_TARBALL.parents[1] / "README.md"


def _setup(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The command, with only the QPROF_LIBOQS_* settings given (scripts/test-fresh sets
    QPROF_LIBOQS_SETUP=off for everything else)."""
    base = {k: v for k, v in os.environ.items() if k not in (lb.SETUP_ENV, lb.SOURCE_ENV)}
    return subprocess.run([sys.executable, "-m", "qprof", "setup", "liboqs", *args],
                          capture_output=True, text=True, timeout=600,
                          env={**base, **(env or {})})


def test_the_minimal_build_is_the_algorithms_qprof_uses() -> None:
    names = lb.minimal_build().split(";")
    assert names == ["SIG_ml_dsa_44", "SIG_ml_dsa_65", "SIG_ml_dsa_87",
                     "SIG_slh_dsa_pure_shake_128s", "SIG_slh_dsa_pure_shake_128f",
                     "SIG_slh_dsa_pure_shake_192s", "SIG_slh_dsa_pure_shake_192f",
                     "SIG_slh_dsa_pure_shake_256s", "SIG_slh_dsa_pure_shake_256f",
                     "KEM_ml_kem_1024"]
    if SHARED_README.is_file():  # the line shared/README.md gives
        assert f'-DOQS_MINIMAL_BUILD="{lb.minimal_build()}"' in SHARED_README.read_text()
    args = lb.cmake_args(Path("src"), Path("build"), Path("/p"))
    assert "-DBUILD_SHARED_LIBS=ON" in args and "-GNinja" in args
    assert "-DCMAKE_INSTALL_PREFIX=/p" in args


def test_offline_it_says_what_to_run(tmp_path: Path) -> None:
    """Nothing listens on port 9 here: the download fails as it does offline."""
    with pytest.raises(lb.BuildError) as err:
        lb.download(tmp_path, lambda _text: None, url="http://127.0.0.1:9/liboqs.tar.gz")
    text = str(err.value)
    assert text.startswith("cannot download the liboqs 0.16.0 source (")
    assert f"curl -LO {lb.TARBALL_URL}" in text and lb.TARBALL_SHA256 in text
    assert "QPROF_LIBOQS_SOURCE=$PWD/0.16.0.tar.gz qprof setup liboqs" in text
    assert "git clone --branch 0.16.0 --depth 1" in text


def test_a_tarball_that_is_not_the_release_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "liboqs-0.16.0.tar.gz"
    (tmp_path / "liboqs-0.16.0").mkdir()
    (tmp_path / "liboqs-0.16.0" / "CMakeLists.txt").write_text("project(x)\n")
    with tarfile.open(fake, "w:gz") as tar:
        tar.add(tmp_path / "liboqs-0.16.0", arcname="liboqs-0.16.0")
    done = _setup("--prefix", str(tmp_path / "oqs"), "--source", str(fake))
    assert done.returncode == 2, done
    assert "is not the liboqs 0.16.0 release tarball (sha256 " in done.stderr
    assert not (tmp_path / "oqs").exists()


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_git_directory_at_another_commit_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "liboqs"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "CMakeLists.txt").write_text("project(x)\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    done = _setup("--prefix", str(tmp_path / "oqs"), env={lb.SOURCE_ENV: str(repo)})
    assert done.returncode == 2, done
    assert "not liboqs 0.16.0 (5a1a854b0dc9f2141bdc771c555ee60c37950183)" in done.stderr
    assert f"git -C {repo} checkout 0.16.0" in done.stderr


def test_off_means_never(tmp_path: Path) -> None:
    done = _setup("--prefix", str(tmp_path / "oqs"), env={lb.SETUP_ENV: "off"})
    assert done.returncode == 2 and "QPROF_LIBOQS_SETUP=off" in done.stderr
    assert not (tmp_path / "oqs").exists()


@pytest.mark.timeout(900)
@pytest.mark.skipif(lb.setup_disabled(), reason="liboqs builds are off here "
                    "(QPROF_LIBOQS_SETUP=off: scripts/test-fresh, a machine without liboqs)")
@pytest.mark.skipif(not SHARED_TARBALL.is_file(), reason="no ../shared/vendor tarball")
@pytest.mark.skipif(bool(lb.missing_packages()),
                    reason=f"the build needs {', '.join(lb.missing_packages())}")
def test_it_builds_the_release_from_the_shared_tarball(tmp_path: Path) -> None:
    """The real build (~20 s on two quiet cores): ninja's [n/N] steps shown, a library
    that loads and says 0.16.0, found by qprof through OQS_INSTALL_PATH."""
    prefix = tmp_path / "oqs"
    done = _setup("--prefix", str(prefix), env={lb.SOURCE_ENV: str(SHARED_TARBALL)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    out = done.stdout
    assert "(sha256 checked: liboqs 0.16.0)" in out
    steps = [line for line in out.splitlines() if lb.STEP_LINE.match(line.strip())]
    assert steps and steps[-1].strip().startswith("[")
    assert f"liboqs 0.16.0 installed: {prefix}/lib" in out
    lib = lb.lib_in(prefix)
    assert lib is not None and lb.library_version(lib) == "0.16.0"
    found = subprocess.run(
        [sys.executable, "-c", "from qprof.verify.availability import find_liboqs; "
         "print(find_liboqs().source)"],
        capture_output=True, text=True, env={**os.environ, "OQS_INSTALL_PATH": str(prefix)},
        check=True)
    assert found.stdout.strip() == "OQS_INSTALL_PATH"
    # Built again only with --force; what is there stays until the new build works.
    again = _setup("--prefix", str(prefix), env={lb.SOURCE_ENV: str(SHARED_TARBALL)})
    assert again.returncode == 0 and "already there" in again.stdout
