"""`?`: what the keys do and what the columns mean."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

HELP = """\
qprof monitor — keys
  b   measure the selected core now (arrow keys or the mouse select a row)
  p   switch profile (chain Verify-Unit constants)
  v   switch verifier backend
  e   export a Markdown report (the path is shown when written)
  ?   this help            q   quit            Esc / ? / q  close this help

Per-core table
  Cur/Max GHz   current and allowed maximum frequency; "1.08/2.42" = capped below
                the hardware maximum; "~" = estimated from /proc/cpuinfo
  Cap           "⚠ cap ×2.24 policy": capped, by what factor, and why
  µs (VU)       newest verify median on this core and its Verify-Unit estimate

Coverage panel (one row per suite and cluster)
  Est / Const   ceil(100 × median(suite) / median(ML-DSA-44)) on the same core,
                against the profile's constant; Margin = constant − estimate
  Covered       ✓ yes / ✗ NO / "not measured yet" ("not measured here" when
                replaying another machine's snapshot with --root)
  Worst block   a block full of that suite (MAX_BLOCK_VERIFY_UNITS / constant
                signatures) × the median, on one core
  Cap           "⚠ capped": measured while the core ran below its maximum
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape", "dismiss_help", "Close"),
        Binding("question_mark", "dismiss_help", "Close"),
        Binding("q", "dismiss_help", "Close"),
    ]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 84; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Text(HELP), id="help-text")

    def action_dismiss_help(self) -> None:
        self.dismiss(None)

    def on_click(self) -> None:
        self.dismiss(None)
