"""Human formatting shared by ``qprof topology``, ``qprof freq`` and the TUI."""

from __future__ import annotations

import io
from collections.abc import Sequence

from qprof.hw.freq import ClusterFreq, CpuFreq
from qprof.hw.sysfs import format_cpulist


def ghz(khz: int | None, estimated: bool = False) -> str:
    if khz is None:
        return "unknown"
    text = f"{khz / 1e6:.2f} GHz"
    return f"~{text} (est.)" if estimated else text


def ghz_range(lo: int | None, hi: int | None) -> str:
    if lo is None and hi is None:
        return "unknown"
    if lo is None:
        return f"? - {ghz(hi)}"
    return f"{lo / 1e6:.2f} - {ghz(hi)}"


def cap_cell(item: CpuFreq | ClusterFreq) -> str:
    """The cap column of a table: ``CAPPED 2.42 -> 1.08 GHz by policy: 2.24x`` / ``no`` /
    ``unknown (...)`` (sentences about a cap: qprof.hw.caps.cap_message)."""
    if item.capped is None:
        if getattr(item, "online", None) is False:
            return "- (offline)"
        if item.hw_max_khz is None and item.max_khz is None:
            return "unknown (no cpufreq)"
        # cpufreq is there but one of the two files is not: say which (see notes/--json).
        return ("unknown (hardware max unreadable)" if item.hw_max_khz is None
                else "unknown (allowed max unreadable)")
    if not item.capped:
        return "no"
    cause = f" by {item.cap_cause}" if item.cap_cause else ""
    factor = f": {item.cap_factor:.2f}x" if item.cap_factor else ""
    return (f"CAPPED {item.hw_max_khz / 1e6:.2f} -> {ghz(item.max_khz)}"  # type: ignore[operator]
            f"{cause}{factor}")


def table(headers: Sequence[str], rows: Sequence[Sequence[str]],
          right: Sequence[int] = ()) -> str:
    """A plain-text table (rich.table, no borders or colour): columns two spaces apart,
    numbers right-aligned in the columns listed in ``right``, never wrapped."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    grid = Table(box=None, pad_edge=False, padding=(0, 2, 0, 0), header_style="",
                 show_edge=False)
    for i, h in enumerate(headers):
        grid.add_column(Text(h), justify="right" if i in right else "left", no_wrap=True)
    for row in rows:
        grid.add_row(*(Text(cell) for cell in row))  # Text: no markup in the cells
    out = io.StringIO()
    Console(file=out, width=100_000, color_system=None, highlight=False).print(grid)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines())


def merge_problems(*lists: Sequence[str]) -> list[str]:
    """Problems of several readers, in order, without repeats of the same fact."""
    merged = list(dict.fromkeys(p for lst in lists for p in lst))
    if any(p.startswith("no cpufreq:") for p in merged):
        merged = [p for p in merged if not p.startswith("no cpufreq data:")]
    return merged


def problems_text(problems: Sequence[str], limit: int = 8) -> str:
    if not problems:
        return ""
    shown = [f"  - {p}" for p in problems[:limit]]
    if len(problems) > limit:
        shown.append(f"  ... and {len(problems) - limit} more (see --json)")
    return f"{len(problems)} note(s):\n" + "\n".join(shown)


__all__ = [
    "cap_cell",
    "format_cpulist",
    "ghz",
    "ghz_range",
    "merge_problems",
    "problems_text",
    "table",
]
