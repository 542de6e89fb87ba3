"""How `read_topology` scales with the number of CPUs (issue 22, finding 9).

    .venv/bin/python bench/topology_scaling.py [--cpus 1000,4000,16000] [--per-core]

Writes a synthetic root of N identical x86 CPUs (no cpufreq; ``--per-core``: each CPU's
topology names itself alone) per N, and prints the median time of one read and the
time per CPU against the smallest N, measured in the same run: a linear read keeps
that ratio near 1 (the quadratic scan gave 1.4 s at 4k CPUs and 14.7 s at 16k).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from qprof.hw import read_topology


def write_root(root: Path, n: int, per_core: bool) -> None:
    cpu_dir = root / "sys/devices/system/cpu"
    cpu_dir.mkdir(parents=True)
    (cpu_dir / "online").write_text(f"0-{n - 1}\n")
    (root / "proc").mkdir()
    (root / "proc/cpuinfo").write_text("".join(
        f"processor\t: {i}\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 167\n"
        "model name\t: Test\nflags\t\t: fpu avx2\n\n" for i in range(n)))
    for i in range(n):
        (cpu_dir / f"cpu{i}").mkdir()
        if per_core:
            (cpu_dir / f"cpu{i}/topology").mkdir()
            (cpu_dir / f"cpu{i}/topology/core_siblings_list").write_text(f"{i}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpus", default="1000,4000,16000")
    parser.add_argument("--per-core", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(x) for x in args.cpus.split(",")]
    base: float | None = None
    affinity = sorted(os.sched_getaffinity(0))
    print(f"not pinned: may run on CPUs {affinity} of {os.cpu_count()}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            root = Path(tmp) / str(n)
            write_root(root, n, args.per_core)
            read_topology(root)  # warm the dentry cache
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                topo = read_topology(root)
                times.append(time.perf_counter() - t0)
            t = statistics.median(times)
            per_cpu = t / n
            base = base or per_cpu
            print(f"{n:>7} CPUs ({len(topo.clusters)} cluster(s)): median {t:.3f} s, "
                  f"{per_cpu * 1e6:.1f} us per CPU = {per_cpu / base:.2f}x the {sizes[0]}-CPU "
                  "read's")


if __name__ == "__main__":
    main()
