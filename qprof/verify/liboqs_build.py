"""Build the pinned liboqs release for qprof: a minimal shared build of the algorithms qprof
uses, into ``~/_oqs`` (where :func:`qprof.verify.availability.find_liboqs` looks).

liboqs-python would clone and build an unpinned liboqs at import; qprof never lets it
(``verify/liboqs_lib.py``) and offers this, run on purpose (``qprof setup liboqs``): the
release 0.16.0 from the network or ``$QPROF_LIBOQS_SOURCE``, checked by content (a tarball
by its sha256, a directory by the git tree hash of its files, never by its ``.git``). It
installs into a staging directory, then moves only liboqs's own files into the prefix, each
renamed into place, ``lib/liboqs.so`` last: whatever else the prefix holds stays.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from qprof.verify.availability import lib_in
from qprof.verify.gittree import TreeError, copy_tree
from qprof.verify.liboqs_lib import open_named
from qprof.verify.suites import KEMS, SUITES

VERSION = "0.16.0"
COMMIT = "5a1a854b0dc9f2141bdc771c555ee60c37950183"
# sha256 of `git archive --prefix=liboqs-0.16.0/ --format=tar.gz` of COMMIT (GitHub's
# release tarball is made the same way).
TARBALL_SHA256 = "1b82e61efbe55b8ed98374d8b6f416e948b59154612153c71909b060e1368941"
# git's tree of COMMIT (`git rev-parse 0.16.0^{tree}`; what `git write-tree` gives for the
# release tarball's files): a source directory must hash to it.
TREE = "8e0a3a68b247f821ed535a141aa896a7fda59d2d"
TARBALL_URL = (f"https://github.com/open-quantum-safe/liboqs/archive/refs/tags/"
               f"{VERSION}.tar.gz")
SOURCE_ENV = "QPROF_LIBOQS_SOURCE"
# "off": never build (scripts/test-fresh: a fresh machine's suite runs without liboqs).
SETUP_ENV = "QPROF_LIBOQS_SETUP"
DOWNLOAD_TIMEOUT_S = 30.0
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

Say = Callable[[str], None]


class BuildError(RuntimeError):
    """The build cannot start; the message says what to do (one paragraph)."""


class BuildFailed(BuildError):
    """cmake or ninja failed, or the build gave no working library: the last lines."""


class Stopped(BaseException):
    """Ctrl-C, SIGTERM or SIGHUP during a build (under :func:`stopping`): the build tree is
    removed on the way out; ``installed``: it came once liboqs was in place."""

    def __init__(self, signum: int, installed: bool = False) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.installed = installed


def _stop(signum: int, _frame: object) -> None:
    raise Stopped(signum)


@contextlib.contextmanager
def stopping() -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP raise :class:`Stopped` (one ignored, as under nohup,
    stays ignored)."""
    before = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    for sig, handler in before.items():
        if handler is not signal.SIG_IGN:
            signal.signal(sig, _stop)
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


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


def qprof_command() -> str:
    """How to run this qprof from the user's shell: ``qprof`` when the shell finds this
    very one, else its venv's script by path (``.venv/bin/qprof`` from the repo): a
    venv not activated has no ``qprof`` on PATH."""
    script = Path(sys.executable).parent / "qprof"
    found = shutil.which("qprof")
    if not script.is_file() or (found and Path(found).resolve() == script.resolve()):
        return "qprof"
    try:
        return str(script.relative_to(Path.cwd()))
    except ValueError:
        return str(script)


def offline_help(prefix: Path) -> str:
    """What to run where qprof cannot download the source (a command that runs from
    where the user is: :func:`qprof_command`)."""
    qprof = qprof_command()
    return (
        f"get the liboqs {VERSION} source on a machine with network and point qprof at "
        "it, either the release tarball:\n"
        f"    curl -LO {TARBALL_URL}   # sha256 {TARBALL_SHA256}\n"
        f"    QPROF_LIBOQS_SOURCE=$PWD/{VERSION}.tar.gz {qprof} setup liboqs\n"
        "or a git clone at the release commit:\n"
        f"    git clone --branch {VERSION} --depth 1 "
        "https://github.com/open-quantum-safe/liboqs\n"
        f"    QPROF_LIBOQS_SOURCE=$PWD/liboqs {qprof} setup liboqs\n"
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


def checked_copy(path: Path, dest: Path) -> Path:
    """``path``'s files copied to ``dest``, whose git tree hash must be the release's."""
    try:
        got = copy_tree(path, dest)
    except TreeError as exc:
        raise BuildError(f"{exc}; give the release tarball or a clean git clone of liboqs "
                         f"{VERSION}") from None
    if got != TREE:
        raise BuildError(
            f"{path} does not hold the liboqs {VERSION} source: its files' git tree is "
            f"{got}, not {TREE} (commit {COMMIT}): git -C {path} checkout {VERSION}, and "
            f"no files of its own in it (git -C {path} clean -dxf)")
    return dest


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


def _data_members(tar: tarfile.TarFile, tarball: Path) -> list[tarfile.TarInfo]:
    """The members, for a Python without tarfile's "data" filter (3.11.0-3.11.3: Debian
    12's python3 is 3.11.2), held to stricter rules than the filter's: the release holds
    files and directories only, so only those pass, each name relative and without "..",
    no special mode bits, owned by this user. Anything else is a BuildError."""
    out = []
    for m in tar.getmembers():
        if m.name.startswith("/") or ".." in m.name.split("/"):
            raise BuildError(f"{tarball}: {m.name!r} would leave the source directory")
        if not (m.isreg() or m.isdir()):
            raise BuildError(f"{tarball}: {m.name!r} is not a file or a directory")
        m.mode &= 0o755
        m.uid, m.gid, m.uname, m.gname = os.getuid(), os.getgid(), "", ""
        out.append(m)
    return out


def unpack(tarball: Path, dest: Path) -> Path:
    """The tarball's top directory, unpacked under ``dest`` (no path leaves it)."""
    try:
        with tarfile.open(tarball) as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(dest, filter="data")
            else:
                tar.extractall(dest, members=_data_members(tar, tarball))
    except (tarfile.TarError, OSError) as exc:  # FilterError is a TarError
        raise BuildError(f"{tarball}: cannot unpack it ({exc})") from exc
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
            tree = checked_copy(path, work / "src")
            say(f"source: {path} (its files' git tree checked: liboqs {VERSION})")
            return tree
        if not path.is_file():
            why = "not a tarball or a directory" if path.exists() else \
                "no such file or directory"
            raise BuildError(f"the liboqs source {source}: {why}")
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
    """Run ``argv``, each output line to ``on_line``; the last lines on failure. In a
    session of its own: stopped (Ctrl-C, SIGTERM, SIGHUP), qprof ends it and its compilers
    before the build tree is removed."""
    tail: list[str] = []
    with subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, errors="replace", env=env,
                          start_new_session=True) as proc:
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                line = line.rstrip()
                tail = (tail + [line])[-30:]
                on_line(line)
        except BaseException:
            _end_group(proc)
            raise
    if proc.returncode != 0:
        raise BuildFailed(f"`{' '.join(argv[:2])} ...` failed (exit {proc.returncode}):\n"
                         + "\n".join(tail))
    return tail


def _end_group(proc: subprocess.Popen[str]) -> None:
    for sig, wait_s in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def library_version(lib: Path) -> str | None:
    """OQS_version() of a built library (None: it is no whole ELF or does not load)."""
    named = open_named(str(lib))
    return None if isinstance(named, str) else named.version


@dataclass(frozen=True)
class Built:
    prefix: Path
    library: Path
    version: str


def build(prefix: Path, source: str | None, say: Say, step: Say,
          jobs: int | None = None) -> Built:
    """Build liboqs and install it into ``prefix`` (replacing only liboqs's own files).

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
        install(staged, prefix)
    lib = lib_in(prefix)
    assert lib is not None
    return Built(prefix, lib, VERSION)


# ---------------------------------------------------------------- the install


def _install_order(path: Path) -> tuple[int, str]:
    """liboqs.so's own files last: the library, then its links, ``liboqs.so`` at the end
    (what qprof looks for appears only once all the rest is there)."""
    if not path.name.startswith("liboqs.so"):
        return 0, str(path)
    if not path.is_symlink():
        return 1, str(path)
    return (3 if path.name == "liboqs.so" else 2), str(path)


def _real_dir(path: Path) -> None:
    """``path`` a directory (made 0755 when missing), never through a symbolic link."""
    try:
        path.mkdir(mode=0o755)
        return
    except FileExistsError:
        pass
    if path.is_symlink() or not path.is_dir():
        raise BuildError(f"cannot install into {path}: it is not a directory (a symbolic "
                         "link or a file); qprof installs only into real directories")


def _place(src: Path, dest: Path) -> None:
    """``src`` (a file or a link) renamed over ``dest`` through a new temporary beside it
    (never through a link planted there)."""
    tmp = dest.with_name(f".{dest.name}.qprof-{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    if src.is_symlink():
        os.symlink(os.readlink(src), tmp)
    else:
        mode = src.stat().st_mode & 0o777
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                     | os.O_CLOEXEC, mode)
        with os.fdopen(fd, "wb") as out, src.open("rb") as f:
            shutil.copyfileobj(f, out)
            os.fchmod(out.fileno(), mode)
    os.replace(tmp, dest)


def install(staged: Path, prefix: Path) -> None:
    """Move liboqs's files from ``staged`` into ``prefix``, replacing those files only;
    Ctrl-C, SIGTERM and SIGHUP wait until every file is in place (then :class:`Stopped`
    says it was installed)."""
    files = sorted((p for p in staged.rglob("*") if not p.is_dir() or p.is_symlink()),
                   key=_install_order)
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        prefix.mkdir(parents=True, exist_ok=True)
        for src in files:
            dest = prefix
            for part in src.relative_to(staged).parent.parts:
                dest = dest / part
                _real_dir(dest)
            try:
                _place(src, dest / src.name)
            except OSError as exc:
                raise BuildError(f"cannot install {dest / src.name}: "
                                 f"{exc.strerror or exc}") from None
        pending = {s for s in signal.sigpending() & set(STOP_SIGNALS)
                   if signal.getsignal(s) not in (signal.SIG_IGN, signal.SIG_DFL)}
        if pending:
            info = signal.sigtimedwait(pending, 0)
            raise Stopped(info.si_signo if info else min(pending), installed=True)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def default_prefix() -> Path:
    return Path("~/_oqs").expanduser()


def setup_disabled() -> bool:
    return os.environ.get(SETUP_ENV, "").lower() in ("off", "0", "no")
