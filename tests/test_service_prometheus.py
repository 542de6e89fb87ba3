"""A real Prometheus server scrapes a real `qprof daemon` and answers a query.

Skips only where the `prometheus` binary is missing (scripts/test installs the Debian
package when run as root).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_service_daemon import NO_CYCLE, DaemonProc, wait_for
from test_service_watch import cap, make_root


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def query(port: int, expr: str) -> list[dict[str, object]]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            body = json.load(resp)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return []
    return list(body.get("data", {}).get("result", [])) if body.get("status") == "success" \
        else []


def prometheus_binary() -> str:
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("prometheus binary not installed (Debian package 'prometheus'; "
                    "scripts/test installs it when run as root)")
    return binary


@contextlib.contextmanager
def running_prometheus(tmp_path: Path, targets: list[str],
                       rule_files: tuple[Path, ...] = ()) -> Iterator[int]:
    """A real Prometheus on a loopback port scraping ``targets`` (HOST:PORT) every second
    and evaluating ``rule_files`` every second; yields its port, stops it on exit."""
    binary = prometheus_binary()
    prom_port = free_port()
    config = tmp_path / "prometheus.yml"
    rules = "".join(f"  - {path}\n" for path in rule_files)
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        + (f"rule_files:\n{rules}" if rules else "")
        + "scrape_configs:\n  - job_name: qprof\n    static_configs:\n"
        f"      - targets: {json.dumps(targets)}\n")
    with open(tmp_path / "prometheus.log", "w") as log:
        prom = subprocess.Popen(
            [binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{prom_port}"],
            stdout=log, stderr=subprocess.STDOUT)
        try:
            yield prom_port
        finally:
            prom.terminate()
            try:
                prom.wait(timeout=10)
            except subprocess.TimeoutExpired:
                prom.kill()
                prom.wait(timeout=10)


def scrape_target(d: DaemonProc) -> str:
    return d.metrics_url.removeprefix("http://").removesuffix("/metrics")


def test_prometheus_scrapes_the_daemon(tmp_path: Path) -> None:
    prometheus_binary()
    root = make_root(tmp_path)
    cap(root, 1, 1075200)
    d = DaemonProc(tmp_path, "--root", str(root), *NO_CYCLE)
    try:
        with running_prometheus(tmp_path, [scrape_target(d)]) as prom_port:
            result = wait_for("a qprof series in Prometheus",
                              lambda: query(prom_port, "qprof_cpu_max_frequency_hertz"),
                              timeout=45, every=0.5)
            series = {(r["metric"]["cpu"], r["metric"]["job"]): float(r["value"][1])
                      for r in result}  # type: ignore[index,call-overload]
            assert series[("0", "qprof")] == 1804800e3
            assert series[("2", "qprof")] == 1075200e3  # the cap, as Prometheus stored it
            capped = query(prom_port, "qprof_cpu_capped == 1")
            assert sorted(r["metric"]["cpu"] for r in capped) == ["2", "3"]  # type: ignore[index]
            print("prometheus query qprof_cpu_max_frequency_hertz:", json.dumps(result))
    finally:
        d.stop()
