"""Median time of one full topology + frequency read (what the daemon does each second).

    .venv/bin/python bench/topology_read.py [--repeat N] [--device NAME]

Prints, for this machine and for one corpus device written to a temporary root:
the full read (read_topology + read_frequencies) and the per-second loop read
(read_frequencies with the topology read once). Target: under 5 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from qprof.hw import read_frequencies, read_topology

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "cpuinfo-devices"


def median_ms(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(median wall ms, median CPU ms): CPU time is the cost to the machine; wall time
    also counts waiting for a CPU, which grows with whatever else runs."""
    fn()  # warm caches (dentries, imports)
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        fn()
        cpu.append(time.thread_time_ns() - c0)
        wall.append(time.perf_counter_ns() - t0)
    return statistics.median(wall) / 1e6, statistics.median(cpu) / 1e6


def load() -> str:
    try:
        with open("/proc/loadavg") as f:
            return f.read().split()[0]
    except OSError:
        return "?"


def bench_root(label: str, root: str | Path, repeat: int) -> None:
    topo = read_topology(root)
    full, full_cpu = median_ms(lambda: read_frequencies(root, read_topology(root)), repeat)
    loop, loop_cpu = median_ms(lambda: read_frequencies(root, topo), repeat)
    print(f"{label}: {len(topo.cpus)} CPUs, {len(topo.clusters)} clusters\n"
          f"  full read (topology + frequencies): median {full:.2f} ms wall, "
          f"{full_cpu:.2f} ms CPU -> target 5 ms {'met' if full < 5 else 'MISSED'}\n"
          f"  per-second loop (topology kept):    median {loop:.2f} ms wall, "
          f"{loop_cpu:.2f} ms CPU\n"
          f"  (load average {load()} on {os.cpu_count()} CPUs)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--device", default="galaxy-s9-global",
                        help="corpus device (../shared/corpus/cpuinfo-devices/NAME.json)")
    args = parser.parse_args()
    bench_root("this machine (/)", "/", args.repeat)
    path = CORPUS / f"{args.device}.json"
    if not path.is_file():
        print(f"corpus device not found: {path} (skipped)")
        return
    device = json.loads(path.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        for rel, content in device["files"].items():
            target = Path(tmp) / rel.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
        bench_root(f"corpus {args.device}", tmp, args.repeat)
    seeds = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "hw" / "seeds-arm"
    if seeds.is_dir():
        bench_root("fixture seeds-arm", seeds, args.repeat)


if __name__ == "__main__":
    main()
