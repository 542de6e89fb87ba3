"""Frequency history per cluster as text sparklines (one line each, newest right)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from qprof.tui.model import ClusterHistory, fmt_ghz

BARS = "▁▂▃▄▅▆▇█"


def sparkline(samples: tuple[int, ...], scale: int | None, width: int) -> str:
    """Bars from 0 to ``scale`` (the hardware maximum), so a cap shows as a drop."""
    if width <= 0 or not samples:
        return ""
    shown = samples[-width:]
    top = scale or max(shown) or 1
    out = []
    for value in shown:
        level = min(len(BARS) - 1, max(0, round((len(BARS) - 1) * value / top)))
        out.append(BARS[level])
    return "".join(out)


class FreqHistory(Static):
    DEFAULT_CSS = """
    FreqHistory { height: auto; padding: 0 1; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__("", **kwargs)  # type: ignore[arg-type]
        self._shown: tuple[ClusterHistory, ...] | None = None
        self._width = 0

    def show(self, history: tuple[ClusterHistory, ...]) -> None:
        width = self.content_size.width
        if history == self._shown and width == self._width:
            return
        self._shown, self._width = history, width
        lines = []
        for h in history:
            label = f"{h.label:<16.16}"
            last = h.samples_khz[-1] if h.samples_khz else None
            if last is None:
                lines.append(f"{label} no cpufreq data")
                continue
            tail = f" {fmt_ghz(last)}/{fmt_ghz(h.max_khz)} GHz"
            room = max(0, (width or 40) - len(label) - len(tail) - 1)
            spark = sparkline(h.samples_khz, h.max_khz, room)
            lines.append(f"{label} {spark:<{room}}{tail}")
        text = Text("\n".join(lines) or "no frequency data", no_wrap=True, overflow="crop")
        self.update(text)

    def on_resize(self) -> None:
        if self._shown is not None:
            self.show(self._shown)  # the sparkline width follows the panel
