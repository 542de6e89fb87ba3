"""Where numba's compiled kernels go: the user's cache directory, never the package."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import qprof.verify.nb as nb

PRINT_CACHE = "import qprof.verify.nb; from numba.core import config; print(config.CACHE_DIR)"


def cache_dir_in(env: dict[str, str]) -> Path:
    base = {k: v for k, v in os.environ.items()
            if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    out = subprocess.run([sys.executable, "-c", PRINT_CACHE], env={**base, **env},
                         capture_output=True, text=True, check=True).stdout
    return Path(out.strip())


@pytest.mark.fresh
def test_xdg_cache_home_then_home(tmp_path: Path) -> None:
    name = "qprof-nb-" + nb.source_digest()
    xdg = tmp_path / "xdg"
    assert cache_dir_in({"XDG_CACHE_HOME": str(xdg)}) == xdg / "qprof" / "numba" / name
    home = tmp_path / "home"
    home.mkdir()
    assert cache_dir_in({"HOME": str(home)}) == home / ".cache" / "qprof" / "numba" / name
    assert (home / ".cache" / "qprof" / "numba" / name).is_dir()


def test_numba_cache_dir_is_honoured_and_old_digests_are_left_alone(tmp_path: Path) -> None:
    old = tmp_path / "qprof-nb-0000000000000000"
    (old / "kept").mkdir(parents=True)
    got = cache_dir_in({"NUMBA_CACHE_DIR": str(tmp_path)})
    assert got == tmp_path / ("qprof-nb-" + nb.source_digest())
    assert (old / "kept").is_dir()  # importing never deletes directories


@pytest.mark.fresh
def test_unwritable_home_uses_a_private_temp_dir_not_the_package(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".cache").write_text("not a directory")  # nothing can be created under it
    got = cache_dir_in({"HOME": str(home)})
    package = Path(nb.__file__).resolve().parent
    assert package not in got.parents and got.name.startswith("qprof-nb-")
    assert not got.exists()  # removed when that process exited
