"""The monitor's widgets, one per module (header, core table, coverage, history,
alerts, progress, help and choice screens)."""
