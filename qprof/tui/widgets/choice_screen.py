"""A small modal list (profile or backend); unusable entries are shown with the reason."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option


class ChoiceScreen(ModalScreen[str | None]):
    """Returns the chosen key, or None when dismissed with Esc."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    ChoiceScreen { align: center middle; }
    ChoiceScreen > Vertical {
        width: 76; max-width: 100%; height: auto; max-height: 90%;
        border: round $accent; background: $surface;
    }
    ChoiceScreen #choice-title { padding: 0 1; }
    ChoiceScreen OptionList { height: auto; max-height: 16; }
    """

    def __init__(self, title: str, choices: list[tuple[str, str, bool]],
                 current: str | None = None) -> None:
        """choices: (key, label, enabled)."""
        super().__init__()
        self.title_text = title
        self.choices = choices
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.title_text, id="choice-title", markup=False)
            yield OptionList(*[Option(Text(label), id=key, disabled=not enabled)
                               for key, label, enabled in self.choices])

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        keys = [k for k, _, _ in self.choices]
        if self.current in keys:
            options.highlighted = keys.index(self.current)
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
