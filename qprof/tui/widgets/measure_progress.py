"""Progress of the measurement in flight: what is measured, a bar and the ETA (the label
wraps on word boundaries rather than being cut)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import ProgressBar, Static

from qprof.tui.model import Progress


class MeasureProgress(Horizontal):
    DEFAULT_CSS = """
    MeasureProgress { height: auto; max-height: 4; display: none; padding: 0 1; }
    MeasureProgress.-busy { display: block; }
    MeasureProgress > #progress-label { width: 1fr; height: auto; }
    MeasureProgress > ProgressBar { width: auto; }
    """

    def compose(self) -> ComposeResult:
        yield Static("", id="progress-label")
        yield ProgressBar(total=1000, show_eta=False, id="progress-bar")

    def show(self, progress: Progress | None) -> None:
        self.set_class(progress is not None, "-busy")
        if progress is None:
            return
        eta = "" if progress.eta_s is None else f" · ETA {progress.eta_s:.0f} s"
        # Before the first round the engine prepares (signs the first pool): say that.
        doing = "" if progress.item.startswith(("signing", "preparing")) else "measuring "
        label = f"{doing}{progress.item} · {progress.fraction * 100:.0f}%{eta}"
        self.query_one("#progress-label", Static).update(
            Text(label))
        self.query_one(ProgressBar).update(progress=round(progress.fraction * 1000))
