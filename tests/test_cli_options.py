"""The shared option shapes (--cpus, --suites, --backends, --backend) in every command,
and the shell completion generated from the real parsers (run in a real bash)."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from faults import QPROF, one_line, qprof
from gen_run_json import CACHE_128S, _block_file, gen_lines, qprof_env

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


# -- done when #5: no traceback from any command on any input of these findings -------------

def test_no_traceback_on_any_input_of_part_b(tmp_path: Path) -> None:
    adv = tmp_path / "adv"
    adv.mkdir()
    (adv / CACHE_128S).write_text('{"summary": []}')
    run = gen_lines(tmp_path / "run.jsonl")
    block_file = _block_file(tmp_path, "results_int")
    cases: list[tuple[list[str], int]] = [
        (["check", "--from", str(gen_lines(tmp_path / "k.jsonl", profile="/proc/kmsg"))], 2),
        (["check", "--from", str(run)], 3),
        (["report", str(run), "--block", str(block_file)], 2),
        (["report", "--block", "/dev/zero"], 2),
        (["check", "-o", "/proc/version", "--cpus", "0"], 2),
        (["export", "latest", "-o", str(tmp_path), "--state-dir", str(tmp_path)], 2),
        (["adversary", "ML-DSA-44", "--out", str(tmp_path)], 2),
        (["block", "--signatures", "1000000000000"], 2),
        (["daemon", "--watch-interval", "1e300", "--listen", "none", "--state-dir",
          str(tmp_path / "st")], 2),
    ]
    for argv, code in cases:
        r = qprof_env(*argv, env={"QPROF_ADVERSARY_DIR": str(adv)}, timeout=60)
        assert "Traceback" not in r.stderr, (argv, r.stderr[-2000:])
        assert r.returncode == code, (argv, r.returncode, r.stderr[-2000:])


@pytest.mark.parametrize("argv", [["freq", "--watch", "1e300"],
                                  ["bench", "--rounds", str(10 ** 400)],
                                  ["check", "--time-limit", "1e300"]])
def test_16_every_numeric_option_is_bounded_above(argv: list[str]) -> None:
    """An option without its own upper bound has one (options.DEFAULT_AT_MOST)."""
    r = qprof_env(*argv, timeout=30)
    assert "Traceback" not in r.stderr and r.returncode == 2, r.stderr[-2000:]
    assert "at most" in r.stderr


# -- 12. bad numbers: exit 2 with the option and its rule --------------------------------------

def _numeric_options() -> list[tuple[str, argparse.Action]]:
    from qprof.cli import COMMANDS, command_module

    out = []
    for name in COMMANDS:
        parser = argparse.ArgumentParser(prog=f"qprof {name}")
        command_module(name).add_parser(parser)
        out += [(name, a) for a in parser._actions
                if a.type in (int, float) or type(a.type).__name__ == "Number"]
    return out


def test_12_every_numeric_option_is_checked() -> None:
    """Every numeric option of every command has the validating type, but the daemon's,
    which its config checks (the same rules for flags and its TOML file)."""
    from qprof.service import config

    unchecked = [(name, a.option_strings[0]) for name, a in _numeric_options()
                 if a.type in (int, float) and name != "daemon"]
    assert not unchecked
    daemon = {a.dest for name, a in _numeric_options() if name == "daemon"}
    assert daemon and daemon <= config._NUMBERS | config._INTS


def _bad_values(action: argparse.Action) -> list[str]:
    rule = action.type
    bad = ["nan", "inf", "-inf", "x"]
    for bound in ("at_least", "above"):
        value = getattr(rule, bound, None)
        if value is not None:
            bad.append(str(value - 1) if bound == "at_least" else str(value))
    return bad


@pytest.mark.parametrize("name,option", [
    (name, a.option_strings[0]) for name, a in _numeric_options() if name != "daemon"])
def test_12_a_bad_number_exits_2(name: str, option: str, capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from qprof.cli import command_module, main

    def accepted(args: argparse.Namespace) -> int:
        pytest.fail(f"qprof {name} ran with {option}={getattr(args, action.dest)!r}")

    monkeypatch.setattr(command_module(name), "run", accepted)
    [action] = [a for n, a in _numeric_options() if n == name and a.option_strings[0] == option]
    for bad in _bad_values(action):
        with pytest.raises(SystemExit) as exc:
            main([name, f"{option}={bad}"])
        assert exc.value.code == 2, (option, bad)
        err = capsys.readouterr().err
        assert f"argument {option}" in err and "must be" in err, err


@pytest.mark.parametrize("args", [
    ["bench", "--rounds", "-3"], ["bench", "--rounds", "0"], ["check", "--time-limit", "-1"],
    ["check", "--interleave", "-1"], ["check", "--interleave", "nan"]],
    ids=lambda a: " ".join(a))
def test_12_the_issue_s_bad_numbers(args: list[str], tmp_path: Path) -> None:
    r = qprof(*args, "-o", str(tmp_path / "x.jsonl"), cwd=os.getcwd())
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert f"argument {args[1]}: must be" in r.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "x.jsonl").exists()


@pytest.mark.parametrize("device", ["/dev/full"])
def test_11_stdout_on_a_full_device_is_one_line(device: str) -> None:
    for args in (["topology", "--json"], ["freq", "--json"], ["env"], ["backends", "--json"]):
        with open(device, "w") as fh:
            r = subprocess.run([*QPROF, *args], stdout=fh, stderr=subprocess.PIPE, text=True,
                               timeout=60)
        assert r.returncode == 2, (args, r.stderr)
        assert "No space left" in one_line(r.stderr), args
