"""qprof freq: per-CPU current/max frequency, cap flags and factor (optionally live)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from datetime import datetime

from qprof.commands.options import Number
from qprof.commands.output import emit
from qprof.hw.format import cap_cell, ghz, problems_text, table
from qprof.hw.freq import CapWatch, FreqReading, read_frequencies
from qprof.hw.model import Topology
from qprof.hw.topology import NotLinuxRoot, read_topology


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", default="/",
                        help="root directory holding proc/ and sys/ (default: this machine)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--watch", nargs="?", type=Number(float, above=0.0), const=1.0,
                        default=None,
                        metavar="SECONDS", help="repeat every SECONDS (default 1) until Ctrl-C")
    parser.add_argument("--count", type=Number(int, at_least=1), default=None,
                        help="with --watch: stop after this many readings")
    parser.add_argument("--no-estimate", action="store_true",
                        help="on a machine without cpufreq, do not measure the clock")


def render(reading: FreqReading, topo: Topology, watch: CapWatch | None = None) -> str:
    by_cpu = {c.cpu: c for c in topo.cpus}
    rows = []
    for f in reading.cpus:
        t = by_cpu.get(f.cpu)
        cap = cap_cell(f)
        if watch is not None:
            state = watch.summary(f.cpu)
            if f.capped and state.since is not None:
                cap += (" (on when the watch started)" if state.since == watch.first_at
                        else f", since {_clock(state.since)}")
            if state.throttled:
                cap += f", thermal throttle +{state.throttle_events}"
        rows.append([str(f.cpu), "-" if f.cluster is None else str(f.cluster),
                     (t.uarch if t and t.uarch else "unknown"),
                     {True: "yes", False: "no", None: "?"}[f.online],
                     "-" if f.online is False else ghz(f.cur_khz, f.estimated),
                     ghz(f.max_khz), ghz(f.hw_max_khz), f.governor or "-", cap])
    out = table(["CPU", "Cluster", "Core design", "Online", "Current", "Allowed max",
                 "HW max", "Governor", "Cap"], rows)
    extra = []
    if reading.boost is not None:
        extra.append(f"boost {'on' if reading.boost else 'off'}")
    if reading.no_turbo is not None:
        extra.append(f"turbo {'off' if reading.no_turbo else 'on'} (intel_pstate)")
    hot = [z for z in reading.thermal.zones if z.temp_c is not None]
    if hot:
        hottest = max(hot, key=lambda z: z.temp_c or 0)
        extra.append(f"hottest zone {hottest.type or hottest.zone}: {hottest.temp_c:.1f} C")
    active = [c for c in reading.thermal.cooling if c.active]
    if active:
        extra.append("active cooling: " + ", ".join(
            f"{c.type}={c.cur_state}/{c.max_state}" for c in active))
    if extra:
        out += "\n" + "; ".join(extra)
    if watch is not None:
        out += "".join("\n" + line for line in window_lines(watch, topo))
    if any(f.estimated for f in reading.cpus):
        out += ("\n~ = estimated: measured by qprof with a dependent-instruction loop "
                "(the system reports no frequency)")
    reported = sorted({f.reported_khz for f in reading.cpus if f.reported_khz})
    if reported and all(f.cur_source in (None, "estimated") for f in reading.cpus):
        out += ("\n/proc/cpuinfo says " + ", ".join(ghz(k) for k in reported)
                + " (cpu MHz: on a VM the host's nominal clock, not the current one)")
    notes = problems_text(reading.problems)
    if notes:
        out += "\n" + notes
    return out


def _clock(at: float) -> str:
    return datetime.fromtimestamp(at).strftime("%H:%M:%S")


def window_lines(watch: CapWatch, topo: Topology) -> list[str]:
    """Per cluster, what the watch window saw: share of samples capped, worst factor,
    when the current cap started or the last one ended, x86 throttle events."""
    lines = []
    for cl in topo.clusters:
        st = watch.cluster_summary(cl.id)
        if not (st.capped_fraction or st.last_ended or st.throttled):
            continue
        parts = []
        if st.capped_fraction:
            parts.append(f"capped in {st.capped_fraction:.0%} of {st.samples} sample(s)")
            if st.max_factor:
                parts.append(f"worst {st.max_factor:.2f}x" + (f" by {st.cause}"
                                                               if st.cause else ""))
        else:
            parts.append(f"not capped in {st.samples} sample(s)")
        if st.since is not None:
            parts.append("capped since the watch started" if st.since == watch.first_at
                         else f"capped since {_clock(st.since)}")
        if st.last_ended is not None:
            parts.append(f"last cap ended {_clock(st.last_ended)}")
        if st.throttled:
            parts.append(f"thermal throttling: +{st.throttle_events} throttle event(s)")
        lines.append(f"cluster {cl.id} ({cl.uarch or 'unknown'}), last "
                     f"{st.window_s:.0f} s: " + ", ".join(parts))
    return lines


def run(args: argparse.Namespace) -> int:
    try:
        topo = read_topology(args.root)
    except NotLinuxRoot as exc:
        print(f"qprof freq: {exc}", file=sys.stderr)
        return 2
    estimate = not args.no_estimate and os.path.abspath(args.root) == "/"
    if args.watch is None:
        reading = read_frequencies(args.root, topo, estimate=estimate)
        emit(json.dumps(reading.to_dict(), indent=2) if args.json else render(reading, topo))
        return 0
    interval = max(0.1, args.watch)
    watch = CapWatch(args.root, window_s=max(60.0, interval * 10), topology=topo)
    n = 0
    try:
        while args.count is None or n < args.count:
            reading = watch.sample(read_frequencies(args.root, topo, estimate=estimate))
            n += 1
            if {c.cpu for c in topo.cpus if c.online} != {f.cpu for f in reading.cpus
                                                          if f.online}:
                # CPUs went on- or offline: clusters and designs are read again next time.
                # (If the root vanished mid-watch, the last topology is kept.)
                with contextlib.suppress(NotLinuxRoot):
                    topo = watch.topology = read_topology(args.root)
            if args.json:
                d = reading.to_dict()
                d["cap_states"] = {str(k): v.to_dict() for k, v in watch.states().items()}
                d["cluster_cap_states"] = {str(cl.id): watch.cluster_summary(cl.id).to_dict()
                                           for cl in topo.clusters}
                if not emit(json.dumps(d)):
                    break
            else:
                stamp = datetime.fromtimestamp(reading.taken_at).strftime("%H:%M:%S")
                if not emit(f"--- {stamp}\n{render(reading, topo, watch)}\n"):
                    break
            if args.count is not None and n >= args.count:
                break
            time.sleep(interval)
    except KeyboardInterrupt:
        pass
    return 0
