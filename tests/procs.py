"""Live processes by their command line, from /proc as ps shows them (for the tests that
check what a run leaves running)."""

from __future__ import annotations

from pathlib import Path


def processes_with(*markers: str) -> list[int]:
    """Pids of live (not zombie) processes whose command line holds every marker."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if all(m in cmdline for m in markers) and state != "Z":
            pids.append(int(entry.name))
    return pids
