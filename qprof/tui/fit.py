"""Which columns of a table fit the screen whole: a column is shown whole or not at all
(a header cut at the screen's edge to "Pa" says nothing), the least needed left out
first."""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len

CELL_PADDING = 2  # a DataTable column's padding, one column each side


def column_widths(labels: Sequence[str], rows: Sequence[Sequence[str]]) -> list[int]:
    """Each column's width in terminal cells: its label's or its widest cell's."""
    return [max([cell_len(label), *(cell_len(r[i]) for r in rows if i < len(r))])
            for i, label in enumerate(labels)]


def fitting(widths: Sequence[int], drop_order: Sequence[int], room: int) -> tuple[int, ...]:
    """The indices of the columns shown, in table order: columns are left out in
    ``drop_order`` until the rest fit ``room`` cells (each its width plus padding); a
    column not in ``drop_order`` is always kept. ``room`` 0 (not laid out yet): all."""
    shown = list(range(len(widths)))
    if room <= 0:
        return tuple(shown)
    for index in drop_order:
        if sum(widths[i] + CELL_PADDING for i in shown) <= room:
            break
        if index in shown:
            shown.remove(index)
    return tuple(shown)
