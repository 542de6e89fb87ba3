"""The liboqs qprof loads is the one it names (issue 49: findings 10, 11): loaded by its
absolute path whatever the system library path holds, a truncated file passed over with
the reason, and liboqs-python's own installer (a git clone) never run.

Real libraries: copies of the CI cache's build (/var/cache/qprof-ci, never touched
itself), one with its version string changed, one truncated.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hostile_exit import clean_exit

from qprof.verify.liboqs_lib import elf_problem, loaded_problem, open_named

CI_BUILD = Path("/var/cache/qprof-ci/liboqs-0.16.0")
REAL = "liboqs.so.0.16.0"


def _copy(dest: Path) -> Path:
    """A copy of the CI build (lib/liboqs.so -> liboqs.so.9 -> liboqs.so.0.16.0)."""
    if not (CI_BUILD / "lib" / REAL).is_file():
        pytest.skip(f"no CI build of liboqs at {CI_BUILD}")
    shutil.copytree(CI_BUILD, dest, symlinks=True)
    return dest


def _other_version(dest: Path) -> Path:
    """A copy whose OQS_version() says 0.12.0 (the same library otherwise)."""
    lib = _copy(dest) / "lib"
    data = (lib / REAL).read_bytes()
    assert data.count(b"0.16.0\0") == 1
    (lib / REAL).write_bytes(data.replace(b"0.16.0\0", b"0.12.0\0"))
    return lib


def _fake_git(bindir: Path) -> Path:
    """A `git` first on PATH that leaves a mark: liboqs-python's installer clones."""
    bindir.mkdir()
    mark = bindir / "git-ran"
    (bindir / "git").write_text(f"#!/bin/sh\ntouch {mark}\nexit 1\n")
    (bindir / "git").chmod(0o755)
    return mark


def _backends(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items()
            if k not in ("OQS_INSTALL_PATH", "LD_LIBRARY_PATH", "PYOQS_VERSION")}
    return subprocess.run([sys.executable, "-m", "qprof", "backends", "--json"],
                          capture_output=True, text=True, timeout=300, env={**base, **env})


@pytest.mark.fresh
def test_finding_10_the_named_library_is_the_one_loaded(tmp_path: Path) -> None:
    """A 0.12.0 liboqs on LD_LIBRARY_PATH: main reported its version beside the path of
    the 0.16.0 library it named (OQS_INSTALL_PATH)."""
    named = _copy(tmp_path / "named")
    other = _other_version(tmp_path / "other")
    done = _backends({"OQS_INSTALL_PATH": str(named), "LD_LIBRARY_PATH": str(other),
                      "HOME": str(tmp_path)})
    clean_exit(done.returncode, done.stdout, done.stderr)
    assert done.returncode == 0, done.stderr
    liboqs = json.loads(done.stdout)["liboqs"]
    assert liboqs["available"], liboqs
    assert liboqs["version"].startswith("liboqs 0.16.0;")
    assert liboqs["details"]["library"] == str(named / "lib" / "liboqs.so")
    digest = hashlib.sha256((named / "lib" / REAL).read_bytes()).hexdigest()
    assert liboqs["details"]["sha256"] == digest


@pytest.mark.fresh
def test_finding_10_another_loaded_library_is_refused(tmp_path: Path) -> None:
    """What liboqs-python holds is compared with the named file: another file (here a
    0.12.0 copy) is named, with both versions."""
    named = open_named(str(_copy(tmp_path / "named") / "lib" / "liboqs.so"))
    assert not isinstance(named, str) and named.version == "0.16.0"
    other = _other_version(tmp_path / "other") / REAL
    problem = loaded_problem(ctypes.CDLL(str(other)), named, "0.12.0")
    assert problem == (f"liboqs-python loaded {other} (version 0.12.0), not the named "
                       f"{named.path} (version 0.16.0)")
    same = loaded_problem(ctypes.CDLL(named.path), named, "0.16.0")
    assert same is None


@pytest.mark.fresh
@pytest.mark.parametrize("size", [40, 400_000])
def test_finding_11_a_truncated_library_is_passed_over_without_a_clone(
        tmp_path: Path, size: int) -> None:
    """~/_oqs/lib/liboqs.so cut to 40 bytes set off liboqs-python's git clone on main;
    cut to 400 kB, dlopen mapped pages past its end (SIGBUS). qprof says why instead."""
    home = tmp_path / "home"
    _copy(home / "_oqs")
    os.truncate(home / "_oqs" / "lib" / REAL, size)
    mark = _fake_git(tmp_path / "bin")
    done = _backends({"HOME": str(home), "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"})
    clean_exit(done.returncode, done.stdout, done.stderr)
    assert done.returncode == 0, done.stderr
    liboqs = json.loads(done.stdout)["liboqs"]
    assert not liboqs["available"]
    assert f"{home}/_oqs/lib/liboqs.so: cut short ({size} bytes" in liboqs["reason"]
    assert "run `qprof setup liboqs`" in liboqs["reason"]
    assert not mark.exists()


@pytest.mark.fresh
def test_finding_11_liboqs_pythons_installer_cannot_run(tmp_path: Path) -> None:
    """Even where nothing loads, importing liboqs-python the way qprof does raises at
    once: no clone, no build into ~/_oqs."""
    mark = _fake_git(tmp_path / "bin")
    code = ("from qprof.verify.liboqs_lib import only_named\n"
            "try:\n"
            "    with only_named('/nonexistent/liboqs.so'):\n"
            "        import oqs\n"
            "except ValueError as exc:\n"
            "    print('refused:', exc)\n")
    env = {k: v for k, v in os.environ.items() if k != "OQS_INSTALL_PATH"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env={**env, "HOME": str(tmp_path),
                                            "PATH": f"{tmp_path / 'bin'}:{env['PATH']}"})
    assert "refused: Cannot install liboqs version" in done.stdout, done
    assert not mark.exists() and not (tmp_path / "_oqs").exists()


@pytest.mark.fresh
def test_elf_problems_are_named(tmp_path: Path) -> None:
    lib = _copy(tmp_path / "oqs") / "lib" / REAL
    assert elf_problem(str(lib)) is None
    text = tmp_path / "text.so"
    text.write_text("INPUT(-loqs)\n")
    assert elf_problem(str(text)) == "not an ELF file"
    fifo = tmp_path / "fifo.so"
    os.mkfifo(fifo)
    assert elf_problem(str(fifo)) == "not a regular file"
    os.truncate(lib, lib.stat().st_size - 1)
    assert elf_problem(str(lib)) == (f"cut short ({lib.stat().st_size} bytes: its ELF tables "
                                     "lie past the end)")


def test_liboqs_is_loaded_in_one_place() -> None:
    """liboqs-python is imported, and a shared object loaded by ctypes, only where the
    named library is checked (qprof/verify/availability.py, qprof/verify/liboqs_lib.py);
    ctypes.CDLL(None) (the process's own C library) is not a library load."""
    root = Path(__file__).resolve().parents[1] / "qprof"
    homes = {root / "verify" / "availability.py", root / "verify" / "liboqs_lib.py"}
    loads = re.compile(r"^\s*(import oqs|from oqs\b)|import_module\(\s*[\"']oqs"
                       r"|\bCDLL\((?!None)|LoadLibrary\(|cdll\.", re.M)
    bypass = [f"{path.relative_to(root.parent)}:{text.count(chr(10), 0, m.start()) + 1}"
              for path in sorted(root.rglob("*.py")) if path not in homes
              for text in [path.read_text()] for m in loads.finditer(text)]
    assert bypass == []


# -- found by the real systemd (scripts/test-systemd) ------------------------------------------

@pytest.mark.fresh
def test_liboqs_search_without_a_home_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    """A DynamicUser= service has no $HOME and no passwd entry: Path.home() raises."""
    from qprof.verify.availability import find_liboqs

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    found = find_liboqs({"OQS_INSTALL_PATH": "/nonexistent"})
    assert isinstance(found, str) or found.source == "system"
