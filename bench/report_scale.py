"""`qprof report` and `qprof check --from` on many CPUs: the work must grow linearly.

A synthetic run of N CPUs x 2 suites (ML-DSA-44, ML-DSA-87) x 3 rounds each, as issue 31
measured it (report: 250 CPUs 2.1 s, 500 8.2 s, 1000 72 s, 2000 over 300 s; check --from
quadratic). Prints each command's wall time and this process's CPU time per size, and
the CPU time's ratio to the smallest size's, scaled by N (1.0 = linear; on a busy host
the CPU time is the figure to compare). Usage: python bench/report_scale.py [N ...]
"""

from __future__ import annotations

import io
import sys
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from qprof.measure.records import End, Measurement, Meta
from qprof.measure.records_parts import CpuRow, MachineInfo, RunSettings

UNIT_NS, SUITE_NS = 17_000.0, 39_000.0


def many_cpu_run(path: Path, cpus: int, rounds: int = 3) -> Path:
    """A finished run: a meta record (one topology row per CPU), ``rounds`` rounds of both
    suites on each CPU, an end record."""
    meta = Meta(run_id="r", started_at=1000.0, qprof_version="bench", command=["qprof"],
                machine=MachineInfo(hostname="bench"),
                cpus=[CpuRow(cpu=c, uarch="Zen 5") for c in range(cpus)],
                settings=RunSettings(mode="default", unit_suite="ML-DSA-44"))
    lines = [meta.to_json()]
    for cpu in range(cpus):
        for rnd in range(rounds):
            for suite, t in (("ML-DSA-44", UNIT_NS), ("ML-DSA-87", SUITE_NS)):
                t *= 1 + 0.001 * ((cpu * 7 + rnd) % 5)
                lines.append(Measurement(
                    run_id="r", cpu=cpu, suite=suite, backend="liboqs", operation="verify",
                    round=rnd, n=3, median_ns=t, p95_ns=1.01 * t,
                    samples_ns=[t, 1.01 * t, 0.99 * t]).to_json())
    lines.append(End(run_id="r", finished_at=1010.0, status="finished").to_json())
    path.write_text("\n".join(lines) + "\n")
    return path


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one command: on a busy host the
    CPU time is the figure to compare."""
    from qprof.cli import main

    wall, cpu = time.perf_counter(), time.process_time()
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        main(argv)
    return time.perf_counter() - wall, time.process_time() - cpu


def main(sizes: list[int]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base: dict[str, float] = {}
        print(f"{'CPUs':>6} {'report s':>9} {'CPU s':>7} {'x linear':>9} "
              f"{'check --from s':>15} {'CPU s':>7} {'x linear':>9}")
        for n in sizes:
            run = many_cpu_run(Path(tmp) / f"run{n}.jsonl", n)
            times = {"report": timed(["report", str(run), "--profile", "qanum"]),
                     "check": timed(["check", "--from", str(run), "--profile", "qanum"])}
            for k, (_wall, cpu) in times.items():
                base.setdefault(k, cpu / n)
            print(f"{n:>6} " + " ".join(
                f"{wall:>{w}.2f} {cpu:>7.2f} {cpu / n / base[k]:>9.2f}"
                for (k, (wall, cpu)), w in zip(times.items(), (9, 15), strict=True)),
                flush=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [250, 500, 1000, 2000])
