"""sd_notify over $NOTIFY_SOCKET with the standard library (no libsystemd binding).

The protocol: one datagram of ``KEY=VALUE`` lines to the AF_UNIX socket named in
$NOTIFY_SOCKET; a leading '@' means the Linux abstract namespace (a NUL byte).
"""

from __future__ import annotations

import os
import socket


class Notifier:
    """Sends READY/STATUS/WATCHDOG/STOPPING; a no-op when not run by systemd."""

    def __init__(self, environ: dict[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self.address = self._address(env.get("NOTIFY_SOCKET", ""))
        self.watchdog_interval_s = self._watchdog_interval(env)

    @staticmethod
    def _address(name: str) -> str | bytes | None:
        if not name:
            return None
        if name.startswith("@"):
            return b"\0" + name[1:].encode()
        if name.startswith("/"):
            return name
        return None  # vsock and other forms are not ours to handle

    @staticmethod
    def _watchdog_interval(env: dict[str, str] | os._Environ[str]) -> float | None:
        """Half of $WATCHDOG_USEC (systemd's advice), if the watchdog is meant for us."""
        usec = env.get("WATCHDOG_USEC", "")
        pid = env.get("WATCHDOG_PID", "")
        if not usec.isdigit() or int(usec) == 0:
            return None
        if pid and pid.isdigit() and int(pid) != os.getpid():
            return None
        return int(usec) / 2 / 1_000_000

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def send(self, **fields: str | int) -> bool:
        """notify(READY=1, STATUS="...") -> True when a datagram was sent."""
        if self.address is None:
            return False
        payload = "\n".join(f"{k}={v}" for k, v in fields.items()).encode()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as s:
                s.connect(self.address)
                s.sendall(payload)
            return True
        except OSError:
            return False

    def ready(self, status: str) -> bool:
        return self.send(READY=1, STATUS=status)

    def status(self, status: str) -> bool:
        return self.send(STATUS=status)

    def watchdog(self) -> bool:
        return self.send(WATCHDOG=1)

    def stopping(self, status: str = "stopping") -> bool:
        return self.send(STOPPING=1, STATUS=status)
