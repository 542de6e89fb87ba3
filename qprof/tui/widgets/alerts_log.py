"""Alerts, newest first: time (UTC), severity in words, where, kind, message."""

from __future__ import annotations

import time

from rich.text import Text
from textual.widgets import Static

from qprof.tui.model import AlertView

SEVERITY_MARK = {"critical": "‼ CRIT", "warning": "⚠ WARN", "info": "· info"}


def alert_line(a: AlertView) -> str:
    when = time.strftime("%H:%M:%SZ", time.gmtime(a.ts))
    where = f" {a.where}" if a.where else ""
    mark = SEVERITY_MARK.get(a.severity, a.severity)
    return f"{when} {mark}{where} {a.kind}: {a.message}"


class AlertsLog(Static):
    DEFAULT_CSS = """
    AlertsLog { height: auto; padding: 0 1; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__("no alerts", **kwargs)  # type: ignore[arg-type]
        self._shown: tuple[AlertView, ...] | None = None

    def show(self, alerts: tuple[AlertView, ...]) -> None:
        if alerts == self._shown:
            return
        self._shown = alerts
        text = "\n".join(alert_line(a) for a in alerts) or "no alerts"
        self.update(Text(text, no_wrap=True, overflow="ellipsis"))
