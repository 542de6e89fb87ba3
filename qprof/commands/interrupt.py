"""Ctrl-C, SIGTERM and SIGHUP while a command measures: the first stops the engine, which
keeps every measurement finished and ends the run with its End line (``aborted``); a
second leaves at once (KeyboardInterrupt). A closed terminal (SIGHUP) or ``kill`` thus
keeps what Ctrl-C keeps."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass
class Stopping:
    """The engine's stop event and the signal that set it."""

    event: threading.Event = field(default_factory=threading.Event)
    signum: int | None = None

    @property
    def exit_code(self) -> int:
        """128 + the signal, as a shell reports a command a signal ended."""
        return 128 + (self.signum or signal.SIGINT)


@contextlib.contextmanager
def stopping(command: str) -> Iterator[Stopping]:
    """Within: the three signals set the event (once, said on stderr), then raise
    KeyboardInterrupt. The handlers before are restored at the end."""
    state = Stopping()

    def on_signal(signum: int, _frame: object) -> None:
        if state.event.is_set():
            raise KeyboardInterrupt
        state.signum = signum
        state.event.set()
        with contextlib.suppress(OSError):  # a terminal that hung up
            print(f"\nqprof {command}: {signal.Signals(signum).name}: stopping; the "
                  "measurements finished so far are kept (again to leave at once)",
                  file=sys.stderr, flush=True)

    before = {sig: signal.signal(sig, on_signal) for sig in SIGNALS}
    try:
        yield state
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
