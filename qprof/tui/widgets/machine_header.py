"""The header: the machine and its core designs (the model once); profile, backend and
data source. Each line wraps on word boundaries rather than being cut."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from qprof.tui.model import MachineView


class MachineHeader(Static):
    DEFAULT_CSS = """
    MachineHeader {
        height: auto;
        max-height: 5;
        padding: 0 1;
        background: $panel;
    }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__("qprof monitor", **kwargs)  # type: ignore[arg-type]
        self._shown: MachineView | None = None

    def show(self, machine: MachineView) -> None:
        if machine == self._shown:
            return  # nothing changed: no repaint
        self._shown = machine
        line1 = Text.assemble(("qprof", "bold"), " · ", *machine_words(machine))
        if machine.arch:
            line1.append(f" · {machine.arch}")
        if machine.quota:
            line1.append(f" · {CAUTION} {machine.quota}")
        line2 = Text.assemble(
            "profile ", (machine.profile, "bold"), " · backend ", (machine.backend, "bold"),
            " · ", machine.source)
        if machine.activity:  # first, so that 80 columns still show it
            line2 = Text.assemble((machine.activity, "bold"), " · ", line2)
        if machine.problems:
            line2.append(f" · {CAUTION} {machine.problems[0]}")
        self.update(Text("\n").join([line1, line2]))


def machine_words(machine: MachineView) -> tuple[tuple[str, str] | str, ...]:
    """The model, then the core designs; the model once where the designs name it
    ("Intel(R) Xeon(R) Processor (Sapphire Rapids+, by flags) ×2")."""
    if machine.model and machine.model in machine.designs:
        return ((machine.designs, "bold"),)
    return ((machine.model, "bold"), " · ", machine.designs)


CAUTION = "⚠"
