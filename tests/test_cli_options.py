"""The shared option shapes (--cpus, --suites, --backends, --backend) in every command,
and the shell completion generated from the real parsers (run in a real bash)."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from qprof.cli import COMMANDS
from qprof.commands.completion import full_parser
from qprof.commands.options import ListAction


def subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = full_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_lists_take_commas_spaces_or_both() -> None:
    bench = subparsers()["bench"]
    args = bench.parse_args(["--suites", "ML-DSA-44,ML-DSA-87", "SLH-DSA-SHAKE-128s",
                             "--backends", "liboqs", "numba", "--cpus", "0,4-5"])
    assert args.suites == ["ML-DSA-44", "ML-DSA-87", "SLH-DSA-SHAKE-128s"]
    assert args.backends == ["liboqs", "numba"] and args.cpus == "0,4-5"


def test_every_command_has_the_same_shapes() -> None:
    seen: dict[str, list[str]] = {}
    for name, parser in subparsers().items():
        for action in parser._actions:
            if action.dest in ("suites", "backends"):
                assert isinstance(action, ListAction) and action.nargs == "+", (name, action)
            elif action.dest == "cpus":
                assert str(action.metavar).startswith("LIST|"), (name, action.metavar)
            elif action.dest == "backend":
                assert action.metavar == "BACKEND", (name, action.metavar)
            else:
                continue
            seen.setdefault(action.dest, []).append(name)
    assert seen == {"cpus": ["topology", "bench", "block", "check", "daemon"],
                    "suites": ["verify-bench", "bench", "block", "daemon", "pool"],
                    "backends": ["verify-bench", "bench", "pool"],
                    "backend": ["monitor", "block", "check", "daemon"]}


def completion(shell: str) -> str:
    out = subprocess.run([sys.executable, "-m", "qprof", "completion", shell],
                         capture_output=True, text=True, timeout=60, check=True)
    return out.stdout


def test_bash_completion_completes_commands_and_options(tmp_path: Path) -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash not installed")
    script = tmp_path / "qprof.bash"
    script.write_text(completion("bash"))

    def complete(*words: str) -> list[str]:
        line = " ".join(words)
        probe = (f"source {script}; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; "
                 f'COMP_LINE="{line}"; COMP_POINT={len(line)}; _shtab_qprof; '
                 'printf "%s\\n" "${COMPREPLY[@]}"')
        run = subprocess.run([bash, "-c", probe], capture_output=True, text=True,
                             timeout=30, check=True)
        return run.stdout.split()

    assert complete("qprof", "mon") == ["monitor"]
    assert set(complete("qprof", "")) >= set(COMMANDS)
    assert "--html" in complete("qprof", "report", "--h")
    assert "--suites" in complete("qprof", "daemon", "--s")


def test_zsh_completion() -> None:
    script = completion("zsh")
    assert script.startswith("#compdef qprof")
    assert "--html[" in script
    zsh = shutil.which("zsh")
    if zsh is not None:  # a syntax check where zsh is installed
        subprocess.run([zsh, "-n"], input=script, text=True, timeout=30, check=True)
