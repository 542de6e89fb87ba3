"""`?`: what the keys do and what the columns mean."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

# (heading, rows of (term, meaning)); a row without a term is a paragraph. No line breaks
# inside a text: rich wraps each on word boundaries at whatever width the box has.
Section = tuple[str, tuple[tuple[str, str], ...]]
HELP: tuple[Section, ...] = (
    ("qprof monitor: keys (the mouse works too: click rows and footer keys)", (
        ("b", "measure the selected core now (arrows or a click select the row)"),
        ("p", "switch profile (a chain's Verify-Unit constants)"),
        ("v", "switch verifier backend (unusable ones are listed with the reason)"),
        ("e", "export a Markdown report and an HTML page (to exports/ in the state dir, or "
              "--export-dir; both paths are shown when written)"),
        ("?", "this help; q quit; Esc, ? or q close this help"),
        ("", "On a first run with nothing stored, one core per cluster is measured by itself "
             "(as `qprof check`, nice 10, one at a time; the header says so); "
             "`--no-auto-measure` turns that off."),
    )),
    ("Per-core table", (
        ("Cur/Max GHz", "current and allowed maximum frequency; \"1.08/2.42\" is capped "
                        "below the hardware maximum; \"~\" = estimated; \"~3.19 est\" = no "
                        "cpufreq (a VM): clock timed once at start"),
        ("Cap", "\"⚠ cap ×2.24 policy\": capped, by what factor, and why; \"n/a\" = no "
                "cpufreq data (e.g. a VM)"),
        ("Stat", "statistic of the verdict, as `qprof check`: \"paired\" (the quiet-turn "
                 "pairs) for interleaved rounds; \"med\" for rounds timed one suite after "
                 "the other; \"p10\" only when asked for"),
        ("µs (VU)", "newest run's verify time on that core (that statistic), and its VU "
                    "estimate"),
        ("", "Columns that do not fit the screen whole are left out, the least needed "
             "first (a wider terminal shows them)."),
    )),
    ("Coverage panel (one row per suite and cluster)", (
        ("Verify/Stat", "the time compared and its statistic (see Stat above)"),
        ("Est/Const", "ceil(100 × t(suite) / t(ML-DSA-44)), same core, against the "
                      "profile's constant; Margin = Const − Est"),
        ("Covered", "✓ yes / ✗ NO (the whole 95 % interval on one side of the constant) / "
                    "\"? unsure\" (it straddles a binding constant: measure longer, quieter "
                    "or on another core) / \"no reliable estimate\" (the host was too "
                    "contended: no figure) / \"not binding here (over)\": the constants "
                    "follow the reference cores / \"the unit suite\" / \"not measured yet\" "
                    "(\"not measured here\" when replaying a --root snapshot); \"comparison "
                    "only\": a verifier no node runs alone (numba without liboqs): figures, "
                    "never a verdict (the line below the table says what to run)"),
        ("Below", "lines wrap; the worst signature beside the median (a line per SLH-DSA "
                  "suite); the last one is the selected row's whole verdict"),
        ("Cap", "\"⚠ capped ×F\": measured while the core ran below its max"),
        ("Worst block", "a block full of that suite (max block VU / constant signatures) × "
                        "the median, on one core: an estimate"),
    )),
)


def help_text() -> Group:
    """The help as rich renderables: a heading and a two-column grid per section, the
    meanings wrapped on word boundaries."""
    parts: list[Text | Table] = []
    for heading, rows in HELP:
        if parts:
            parts.append(Text(""))
        parts.append(Text(heading, style="bold"))
        grid = Table.grid(padding=(0, 2), expand=True)
        grid.add_column(no_wrap=True)
        grid.add_column(ratio=1, overflow="fold")
        for term, meaning in rows:
            if term:
                grid.add_row(Text("  " + term), Text(meaning))
        parts.append(grid)
        parts += [Text(meaning) for term, meaning in rows if not term]
    return Group(*parts)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape", "dismiss_help", "Close"),
        Binding("question_mark", "dismiss_help", "Close"),
        Binding("q", "dismiss_help", "Close"),
    ]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 100; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(help_text(), id="help-text")

    def action_dismiss_help(self) -> None:
        self.dismiss(None)

    def on_click(self) -> None:
        self.dismiss(None)
