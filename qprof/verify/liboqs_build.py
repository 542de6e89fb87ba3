"""Build the pinned liboqs release for qprof: a minimal shared build of the algorithms qprof
uses, into ``~/_oqs`` (where :func:`qprof.verify.availability.find_liboqs` looks).

liboqs-python's own convention is to build liboqs when it is missing (a git clone at
import time); qprof blocks that (offline it hangs, and a verifier must not change under a
measurement) and offers this instead, run on purpose (``qprof setup liboqs``, which
``./scripts/monitor`` calls when liboqs is missing): the source is the release 0.16.0,
checked after the download (a tarball by its sha256, a git directory by its commit), from
the network or ``$QPROF_LIBOQS_SOURCE``. The build (cmake + ninja, ~20 s on two cores)
installs through a staging directory, so a failed build leaves no half-installed prefix.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from qprof.verify.availability import lib_in
from qprof.verify.suites import KEMS, SUITES

VERSION = "0.16.0"
COMMIT = "5a1a854b0dc9f2141bdc771c555ee60c37950183"
# sha256 of `git archive --prefix=liboqs-0.16.0/ --format=tar.gz` of COMMIT (GitHub's
# release tarball is made the same way).
TARBALL_SHA256 = "1b82e61efbe55b8ed98374d8b6f416e948b59154612153c71909b060e1368941"
TARBALL_URL = (f"https://github.com/open-quantum-safe/liboqs/archive/refs/tags/"
               f"{VERSION}.tar.gz")
SOURCE_ENV = "QPROF_LIBOQS_SOURCE"
# "off": never build (scripts/test-fresh: a fresh machine's suite runs without liboqs).
SETUP_ENV = "QPROF_LIBOQS_SETUP"
DOWNLOAD_TIMEOUT_S = 30.0

Say = Callable[[str], None]


class BuildError(RuntimeError):
    """The build cannot start; the message says what to do (one paragraph)."""


class BuildFailed(BuildError):
    """cmake or ninja failed, or the build gave no working library: the last lines."""


def minimal_build() -> str:
    """``-DOQS_MINIMAL_BUILD`` for every signature suite and KEM qprof knows."""
    sigs = [f"SIG_{s.liboqs_name.lower().replace('-', '_')}" for s in SUITES.values()]
    kems = [f"KEM_{k.liboqs_name.lower().replace('-', '_')}" for k in KEMS.values()]
    return ";".join(sigs + kems)


def cmake_args(source: Path, build: Path, prefix: Path) -> list[str]:
    """The configure line (as shared/README.md gives it)."""
    return ["cmake", "-S", str(source), "-B", str(build), "-GNinja",
            "-DBUILD_SHARED_LIBS=ON", "-DOQS_BUILD_ONLY_LIB=ON", "-DOQS_DIST_BUILD=ON",
            f"-DCMAKE_INSTALL_PREFIX={prefix}", f"-DOQS_MINIMAL_BUILD={minimal_build()}"]


def offline_help(prefix: Path) -> str:
    """What to run where qprof cannot download the source."""
    return (
        f"get the liboqs {VERSION} source on a machine with network and point qprof at "
        "it, either the release tarball:\n"
        f"    curl -LO {TARBALL_URL}   # sha256 {TARBALL_SHA256}\n"
        f"    QPROF_LIBOQS_SOURCE=$PWD/{VERSION}.tar.gz qprof setup liboqs\n"
        "or a git clone at the release commit:\n"
        f"    git clone --branch {VERSION} --depth 1 "
        "https://github.com/open-quantum-safe/liboqs\n"
        "    QPROF_LIBOQS_SOURCE=$PWD/liboqs qprof setup liboqs\n"
        f"(it builds into {prefix}; or build it yourself with the cmake line in README.md "
        "and set OQS_INSTALL_PATH)")


# ---------------------------------------------------------------- tools
@dataclass(frozen=True)
class Tool:
    name: str  # what the build runs
    commands: tuple[str, ...]  # any of these on PATH will do
    package: str  # the Debian package that brings it


TOOLS = (
    Tool("cmake", ("cmake",), "cmake"),
    Tool("ninja", ("ninja", "ninja-build"), "ninja-build"),
    Tool("a C compiler", ("cc", "gcc", "clang"), "gcc"),
)
OPENSSL_HEADER = Path("/usr/include/openssl/evp.h")  # liboqs uses OpenSSL's SHA-2/AES


def missing_packages() -> list[str]:
    missing = [t.package for t in TOOLS if not any(shutil.which(c) for c in t.commands)]
    if not OPENSSL_HEADER.exists() and not any(
            Path("/usr/include").glob("*/openssl/evp.h")):
        missing.append("libssl-dev")
    return missing


def ensure_tools(say: Say, run: Callable[[Sequence[str]], int] | None = None) -> None:
    """cmake, ninja and a compiler: installed through apt when run as root and missing."""
    missing = missing_packages()
    if not missing:
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise BuildError(
            f"the build needs {', '.join(missing)}: install them (Debian/Ubuntu: "
            f"sudo apt-get install {' '.join(missing)}) and run `qprof setup liboqs` again")
    say(f"installing {', '.join(missing)} (apt-get)")
    runner = run or _run_quiet
    if runner(["apt-get", "update", "-qq"]) != 0 or runner(
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing]) != 0:
        raise BuildError(f"apt-get could not install {' '.join(missing)}; install them and "
                         "run `qprof setup liboqs` again")


def _run_quiet(argv: Sequence[str]) -> int:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(list(argv), stdout=subprocess.DEVNULL, env=env,
                          check=False).returncode


def ninja_command() -> str:
    return next((c for c in ("ninja", "ninja-build") if shutil.which(c)), "ninja")


# ---------------------------------------------------------------- the source
def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_tarball(path: Path) -> None:
    got = sha256_of(path)
    if got != TARBALL_SHA256:
        raise BuildError(
            f"{path} is not the liboqs {VERSION} release tarball (sha256 {got}, expected "
            f"{TARBALL_SHA256}: `git archive --prefix=liboqs-{VERSION}/ --format=tar.gz "
            f"{COMMIT}`)")


def check_git_dir(path: Path) -> None:
    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(path), *args], capture_output=True,
                              text=True, check=False)
        if done.returncode != 0:
            raise BuildError(f"{path}: git {' '.join(args)} failed: "
                             f"{done.stderr.strip() or done.returncode}")
        return done.stdout.strip()

    if shutil.which("git") is None:
        raise BuildError(f"{path} is a git directory but git is not installed")
    head = git("rev-parse", "HEAD")
    if head != COMMIT:
        raise BuildError(f"{path} is at commit {head}, not liboqs {VERSION} ({COMMIT}): "
                         f"git -C {path} checkout {VERSION}")
    if git("status", "--porcelain", "--untracked-files=no"):
        raise BuildError(f"{path} has local changes: build from a clean checkout of "
                         f"{VERSION}")


def download(dest: Path, say: Say, url: str = TARBALL_URL) -> Path:
    say(f"downloading {url}")
    target = dest / f"liboqs-{VERSION}.tar.gz"
    try:
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response, \
                target.open("wb") as out:
            shutil.copyfileobj(response, out)
    except (OSError, urllib.error.URLError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise BuildError(f"cannot download the liboqs {VERSION} source ({reason}); "
                         f"{offline_help(Path('~/_oqs'))}") from exc
    return target


def unpack(tarball: Path, dest: Path) -> Path:
    """The tarball's top directory, unpacked under ``dest`` (no path leaves it)."""
    with tarfile.open(tarball) as tar:
        tar.extractall(dest, filter="data")
    tops = [p for p in dest.iterdir() if p.is_dir()]
    if len(tops) != 1 or not (tops[0] / "CMakeLists.txt").is_file():
        raise BuildError(f"{tarball}: no liboqs source tree inside")
    return tops[0]


def source_tree(source: str | None, work: Path, say: Say) -> Path:
    """The checked source tree: from ``source`` (a tarball or a git directory), else
    downloaded."""
    if source:
        path = Path(source).expanduser()
        if path.is_dir():
            if not (path / ".git").exists():
                raise BuildError(f"{path} is a directory but not a git checkout; give the "
                                 "release tarball or a git clone of liboqs")
            check_git_dir(path)
            say(f"source: {path} (git, commit {COMMIT[:12]} = liboqs {VERSION})")
            return path
        if not path.is_file():
            raise BuildError(f"{SOURCE_ENV}={source}: no such file or directory")
        check_tarball(path)
        say(f"source: {path} (sha256 checked: liboqs {VERSION})")
        return unpack(path, work / "src")
    tarball = download(work, say)
    check_tarball(tarball)
    say(f"downloaded; sha256 checked: liboqs {VERSION}")
    return unpack(tarball, work / "src")


# ---------------------------------------------------------------- the build
STEP_LINE = re.compile(r"^\[(\d+)/(\d+)\]")


def run_streamed(argv: Sequence[str], on_line: Say, env: dict[str, str] | None = None) -> \
        list[str]:
    """Run ``argv``, each output line to ``on_line``; the last lines on failure."""
    tail: list[str] = []
    with subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, errors="replace", env=env) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip()
            tail = (tail + [line])[-30:]
            on_line(line)
    if proc.returncode != 0:
        raise BuildFailed(f"`{' '.join(argv[:2])} ...` failed (exit {proc.returncode}):\n"
                         + "\n".join(tail))
    return tail


def library_version(lib: Path) -> str | None:
    """OQS_version() of a built library (None: it does not load)."""
    try:
        handle = ctypes.CDLL(str(lib))
        handle.OQS_version.restype = ctypes.c_char_p
        version: bytes = handle.OQS_version()
        return version.decode()
    except (OSError, AttributeError):
        return None


@dataclass(frozen=True)
class Built:
    prefix: Path
    library: Path
    version: str


def build(prefix: Path, source: str | None, say: Say, step: Say,
          jobs: int | None = None) -> Built:
    """Build and install liboqs into ``prefix`` (which must not hold one already).

    ``say``: what is being done; ``step``: each build line (cmake's, ninja's ``[n/N]``).
    """
    ensure_tools(say)
    prefix = prefix.expanduser().absolute()
    with tempfile.TemporaryDirectory(prefix="qprof-liboqs-") as tmp:
        work = Path(tmp)
        tree = source_tree(source, work, say)
        say(f"configuring (cmake, a minimal build of {len(minimal_build().split(';'))} "
            "algorithms)")
        run_streamed(cmake_args(tree, work / "build", prefix), step)
        say("building (ninja)")
        ninja = [ninja_command(), "-C", str(work / "build")]
        if jobs:
            ninja += ["-j", str(jobs)]
        run_streamed(ninja, step)
        stage = work / "stage"
        run_streamed([*ninja, "install"], step, env={**os.environ, "DESTDIR": str(stage)})
        staged = stage / prefix.relative_to(prefix.anchor)
        lib = lib_in(staged)
        version = library_version(lib) if lib else None
        if lib is None or version != VERSION:
            raise BuildFailed(f"the build installed no working liboqs {VERSION} "
                             f"(found {lib}, version {version})")
        prefix.parent.mkdir(parents=True, exist_ok=True)
        if prefix.exists():
            shutil.rmtree(prefix)  # a prefix without liboqs.so: what was there is no build
        shutil.move(str(staged), str(prefix))
    lib = lib_in(prefix)
    assert lib is not None
    return Built(prefix, lib, VERSION)


def default_prefix() -> Path:
    return Path("~/_oqs").expanduser()


def setup_disabled() -> bool:
    return os.environ.get(SETUP_ENV, "").lower() in ("off", "0", "no")
