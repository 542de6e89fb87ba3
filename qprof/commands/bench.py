"""`qprof bench`: measure suites per core through pyperf workers, write a JSONL run.

pyperf's own JSON of every round is kept in ``<output stem>.pyperf/`` beside the JSONL
(``python -m pyperf stats FILE`` and ``compare_to`` work on it).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from qprof.commands.check_preflight import print_preflight
from qprof.commands.interrupt import stopping
from qprof.commands.options import Number, add_backends, add_cpus, add_suites
from qprof.consensus import ProfileError, load_profile
from qprof.consensus.estimate.stopping import rule_for
from qprof.hw.sysfs import parse_cpu_arg
from qprof.measure import hwinfo
from qprof.measure.config import MODES, TIMERS, BenchConfig, ProgressEvent
from qprof.measure.engine import EngineError, run_bench
from qprof.measure.jsonl import JsonlSink
from qprof.measure.records import Record
from qprof.measure.units import NO_PROFILE_UNIT
from qprof.service.keep import keeper as user_keeper

if TYPE_CHECKING:  # rich is imported only when a terminal shows the bar
    from rich.progress import Progress, TaskID


def add_common(parser: argparse.ArgumentParser) -> None:
    """Options shared by `qprof bench` and `qprof check`."""
    add_cpus(parser, default="one per cluster")
    parser.add_argument("--timer", choices=TIMERS, default="auto",
                        help="wall = perf_counter (the seeds' clock); cpu = CPU time of the "
                        "worker thread; auto = cpu when the machine is busy (default)")
    parser.add_argument("--root", default="/", help=argparse.SUPPRESS)
    # Seconds per (suite, backend, operation) per round, and a cap on rounds: for tests.
    parser.add_argument("--budget", type=Number(float, above=0.0), help=argparse.SUPPRESS)
    parser.add_argument("--max-rounds", type=Number(int, at_least=1), help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=Number(int, at_least=1, odd=True),
                        help="base A/B/A/B/A rounds (odd; default: the mode's)")
    parser.add_argument("--interleave", type=Number(float, at_least=0.0), metavar="MS",
                        help="time the unit and the suites of every round together, in turns "
                        "of MS milliseconds (steadier on a shared host); 0: the seeds' rounds, "
                        "one suite after the other (default: 4 for check, 0 for bench)")
    parser.add_argument("--allow-mismatch", action="store_true",
                        help="time a backend's suite even where it gave a wrong known answer "
                        "before timing (functional check MISMATCH); its figures are shown, "
                        "never decided")


def add_parser(parser: argparse.ArgumentParser) -> None:
    add_common(parser)
    add_suites(parser, default="the profile's")
    add_backends(parser, default="liboqs, else numba")
    parser.add_argument("--profile", default="qanum",
                        help="chain profile, name or path (default: qanum)")
    speed = parser.add_mutually_exclusive_group()
    speed.add_argument("--quick", action="store_true", help="small sample counts (~1 min)")
    speed.add_argument("--full", action="store_true",
                       help="more samples, and SLH-DSA 's' signing (~1 s per signature)")
    parser.add_argument("--no-adaptive", action="store_true",
                        help="do not add rounds while an estimate is unsure")
    parser.add_argument("-o", "--output", metavar="FILE.jsonl",
                        help="output file (default: qprof-bench-<time>.jsonl here)")
    parser.add_argument("--no-store", action="store_true",
                        help="do not keep the run in the user's store (kept by default, "
                        "where history, trend, report and check find it)")
    parser.add_argument("--state-dir", type=Path, metavar="DIR",
                        help="the store the run is kept in (default as for qprof history)")


def _unit_suite(profile: str) -> str:
    """The profile's unit suite, the ratios' denominator in the kept run's points."""

    try:
        return load_profile(profile).unit_suite
    except ProfileError:
        return NO_PROFILE_UNIT.suite


def resolve_cpus(text: str | None, root: str = "/") -> list[int] | None:
    if text is None:
        return None
    if text.strip() == "all":  # every online CPU of the topology
        topo = hwinfo.topology(root)
        return sorted(c.cpu for c in topo.cpus if c.online is not False)
    return parse_cpu_arg(text)


class ProgressLine:
    """One updating line on a terminal; occasional lines otherwise (logs stay readable).
    The round counter is the stopping rule's total with the ETA; the newest µs figures
    stay on it from the first worker's on."""

    def __init__(self, stream: TextIO = sys.stderr) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.last_print = 0.0
        self.lock = threading.Lock()
        self.width = 0
        self.medians: dict[str, float] = {}
        self.rich = self._rich() if self.tty else None

    def _rich(self) -> tuple[Progress, TaskID]:
        """A rich progress bar with the engine's ETA on a terminal."""
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn

        bar = Progress(
            TextColumn("{task.percentage:>5.1f}%"), BarColumn(),
            TextColumn("ETA {task.fields[eta]}"), TextColumn("{task.description}"),
            console=Console(file=self.stream), transient=False,
        )
        task = bar.add_task("starting", total=1.0, eta="?")
        bar.start()
        return bar, task

    def __call__(self, ev: ProgressEvent) -> None:
        with self.lock:
            # The newest µs figures stay on the line from the first worker's on, until
            # newer ones come (a round's event alone carries them).
            self.medians.update(ev.medians or {})
            text = replace(ev, medians=self.medians or None).line()
            if self.rich is not None:
                bar, task = self.rich
                what = text.split("] ", 1)[-1]
                if what.startswith("ETA "):
                    what = what.split(" ", 2)[-1]
                eta = f"{ev.eta_s:.0f}s" if ev.eta_s is not None else "?"
                bar.update(task, completed=ev.fraction, eta=eta, description=what)
                return
            if self.tty:
                pad = max(0, self.width - len(text))
                self.stream.write("\r" + text + " " * pad)
                self.width = len(text)
            else:
                now = time.monotonic()
                if (ev.message not in ("starting",) and not ev.medians
                        and now - self.last_print < 5):  # new figures: at once
                    return
                self.last_print = now
                self.stream.write(text + "\n")
            self.stream.flush()

    def close(self) -> None:
        if self.rich is not None:
            self.rich[0].stop()
            return
        if self.tty and self.width:
            self.stream.write("\n")
            self.stream.flush()


def run(args: argparse.Namespace) -> int:
    mode = "quick" if args.quick else "full" if args.full else "default"
    assert mode in MODES
    try:
        cpus = resolve_cpus(args.cpus, args.root)
    except ValueError as exc:
        print(f"qprof bench: --cpus: {exc}", file=sys.stderr)
        return 2
    out = Path(args.output or f"qprof-bench-{time.strftime('%Y%m%dT%H%M%S')}.jsonl")
    if out.exists():
        print(f"qprof bench: {out} exists; choose another -o", file=sys.stderr)
        return 2
    pyperf_dir = out.with_name(out.stem + ".pyperf")
    config = BenchConfig(
        cpus=cpus, suites=args.suites, backends=args.backends, mode=mode, profile=args.profile,
        rounds=args.rounds, adaptive=not args.no_adaptive, pyperf_dir=pyperf_dir,
        budget_s=args.budget, max_rounds=args.max_rounds,
        record_base=out.parent, root=args.root, timer=args.timer,
        interleave_block_s=None if args.interleave is None else args.interleave / 1000.0,
        command=["qprof", "bench", *sys.argv[2:]] if sys.argv[1:2] == ["bench"] else sys.argv,
        allow_mismatch=args.allow_mismatch,
    )
    line = ProgressLine()
    jsonl = JsonlSink(out)
    keeper = None
    if not args.no_store:
        keeper = user_keeper(args.state_dir, _unit_suite(args.profile))

    def sink(record: Record) -> None:
        jsonl(record)
        if keeper is not None:
            keeper.add(record)

    with stopping("bench") as stop:
        try:
            config, rule = rule_for(config)
            summary = run_bench(config, sink, progress=line, stop=stop.event, rule=rule)
        except (EngineError, ProfileError, ValueError) as exc:
            line.close()
            jsonl.close()
            if out.exists() and out.stat().st_size == 0:
                out.unlink()
            print(f"qprof bench: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            line.close()
            jsonl.close()
            print(f"qprof bench: interrupted; partial run in {out}", file=sys.stderr)
            return 130
        finally:
            if keeper is not None:
                keeper.finish()
                if keeper.error:
                    print(f"qprof bench: warning: {keeper.error}", file=sys.stderr)
    line.close()
    jsonl.close()
    if stop.event.is_set():
        print(f"qprof bench: interrupted; partial run ({len(summary.measurements)} "
              f"measurements) in {out}", file=sys.stderr)
        return stop.exit_code
    print(f"{out}: {summary.status}, {len(summary.measurements)} measurements on CPU "
          f"{', '.join(str(c) for c in summary.cpus)} in {summary.elapsed_s:.0f} s")
    if pyperf_dir.is_dir():
        print(f"pyperf JSON per worker process: {pyperf_dir}/ (python -m pyperf stats FILE)")

    print_preflight([*summary.functional, *summary.resources])
    if summary.checks:
        print(f"{summary.checks:,} checks with two verifiers, "
              f"{summary.disagreements} disagreements")
    for cpu, reason in summary.aborted_cpus.items():
        print(f"CPU {cpu}: {reason}", file=sys.stderr)
    print(f"report: qprof report {out}; verdict: qprof check --from {out} (both give the "
          "estimator's Verify-Unit estimates, as `qprof check` does)")
    return {"finished": 0, "partial": 1}.get(summary.status, 2)
