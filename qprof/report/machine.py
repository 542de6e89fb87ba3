"""The report's first section: machine and method, one column per (run, CPU)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from qprof.measure.markdown import Md, md_code, md_table, md_text
from qprof.measure.records import Meta
from qprof.report.columns import Column


def _meta(c: Column) -> Meta:
    return c.run.meta or Meta(run_id="?", started_at=0.0, qprof_version="?", command=[])


def _machine_cell(c: Column) -> str:
    if not c.run.meta:
        return "?"
    m = c.run.meta.machine
    return f"{m.get('cpu_model') or '?'}, {m.get('arch') or '?'}"


def _core(c: Column) -> Md:
    r = c.cpu_row
    bits = [f"{c.cpu}"]
    if r.get("part_name") or r.get("uarch"):
        bits.append(md_text(" / ".join(str(x) for x in (r.get("part_name"), r.get("uarch"))
                                       if x)))
    if r.get("part"):
        bits.append(f"CPU part {md_code(r['part'])}")
    return Md(", ".join(bits))


def _freq(c: Column) -> str:
    r = c.cpu_row
    hw, mx = r.get("hw_max_khz"), r.get("scaling_max_khz")
    if hw is None and mx is None:
        return "unknown (no cpufreq data)"
    text = f"{(mx or hw or 0) / 1e6:.2f} GHz"
    if r.get("capped") or any(red.capped_rounds for red in c.reduced.values()):
        text += " (capped by the system)"
    return text


def _runtime(c: Column) -> str:
    m, e = c.run.meta, c.end
    if not m or not e:
        return "? (no end line)"
    return f"{e.finished_at - m.started_at:.0f} s ({e.status})"


def _versions(c: Column) -> str:
    v = _meta(c).versions
    parts = [
        f"liboqs {v.get('liboqs_linked') or '-'} "
        f"(liboqs-python {v.get('liboqs_python') or '-'})",
        f"Python {v.get('python') or '-'}", f"numba {v.get('numba') or '-'}",
        f"pyperf {v.get('pyperf') or '-'}",
    ]
    if v.get("qprof_commit"):
        parts.append(f"qprof {v.get('qprof')} @{str(v['qprof_commit'])[:10]}")
    return "; ".join(parts)


def _method(c: Column) -> str:
    s = _meta(c).settings
    return (f"mode {s.get('mode', '?')}, {s.get('rounds', '?')} base rounds "
            f"(up to {s.get('max_rounds', '?')}), nice {s.get('nice', '?')}")


ROWS: tuple[tuple[str, Callable[[Column], str]], ...] = (
    ("File", lambda c: md_code(Path(c.run.path).name)),
    ("Machine", _machine_cell),
    ("Kernel", lambda c: str(_meta(c).machine.get("kernel") or "?")),
    ("Core (pinned)", _core),
    ("Max frequency at start", _freq),
    ("Governor", lambda c: str(c.cpu_row.get("governor") or "unknown")),
    ("Run time (whole run)", _runtime),
    ("Versions", _versions),
    ("Method", _method),
)


def machine_section(cols: list[Column]) -> list[str]:
    lines = ["## Machine and method", ""]
    lines += md_table([""] + [c.label for c in cols],
                      [[name] + [fn(c) for c in cols] for name, fn in ROWS])
    lines += [
        "",
        "- One core, one job: each round ran in a worker process pinned to the core "
        "under nice 10; one operation per sample (loops = 1), kept in pyperf's format.",
        "- A/B/A/B/A rounds: A = the unit suite, B = the other suites, so a drift of the "
        "machine affects all alike; extra B/A pairs were added while an estimate was unsure.",
    ]
    inter = sorted({str(c.run.meta.settings.get("interleaving")) for c in cols
                    if c.run.meta and c.run.meta.settings.get("interleave_block_s")})
    lines += [f"- Interleaving: {md_text(t)}." for t in inter]
    lines += [
        "- Statistics: median and, in brackets, the 95th percentile of all samples of all "
        "rounds; invalid signatures: median of the round medians. Every Verify-Unit "
        "estimate in this report is the estimator's, the one `qprof check` gives for the "
        "same records, with its 95 % interval; the statistic it used is named beside it "
        "(for interleaved rounds the quiet-turn pairs, not the seeds' median rule, whose "
        "figure then stands beside it).",
    ]
    cmds = {" ".join(c.run.meta.command) for c in cols if c.run.meta}
    lines += [f"- Command: {md_code(cmd)}" for cmd in sorted(cmds)]
    return lines + [""]
