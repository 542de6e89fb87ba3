"""A fleet's estimates from its Prometheus (`qprof calibrate --prometheus URL`).

Every node's daemon exports per CPU and suite the estimate of the verifier the profile is
held to (``qprof_vu_estimate``), its 95 % interval's top, the verify time and whether the
ratio binds there; instant queries give them back, a node is its ``instance`` label. The
server is not trusted: one deadline per query and a size cap, and any bad shape or
unusable number is one :class:`FleetError` line naming the URL and the field.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import math
import socket
import threading
import urllib.parse
from typing import Any

from qprof.consensus.calibrate import MAX_CONSTANT, NodeEstimate
from qprof.untrusted import one_line

DEADLINE_S = 30.0  # one query, connect to last byte
MAX_BYTES = 64 << 20  # one query's answer (a 20k-node fleet's vector is a few MB)
MAX_LABEL = 100  # an instance, cpu, suite or backend label, shown and stored
MAX_VERIFY_S = 3600.0  # one signature's verify time
MAX_CPU = 1 << 20


class FleetError(RuntimeError):
    """The Prometheus server cannot be read (the message says which URL and why)."""


def _fail(url: str, why: str) -> FleetError:
    return FleetError(f"{one_line(url, MAX_LABEL)}: {one_line(why, 500)}")


def _get(url: str, target: str, deadline_s: float) -> bytes:
    """GET ``target`` from the server at ``url``: the body, within the deadline and cap."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _fail(url, "expected an http:// or https:// URL of a Prometheus server")
    try:
        port = parts.port
    except ValueError as exc:
        raise _fail(url, str(exc)) from None
    conn_type = (http.client.HTTPSConnection if parts.scheme == "https"
                 else http.client.HTTPConnection)
    conn = conn_type(parts.hostname, port, timeout=deadline_s)
    expired = threading.Event()
    opened: list[socket.socket] = []  # the connection's socket (the response keeps it
    # after conn.close(), which http.client calls on an HTTP/1.0 answer)

    def cut_off() -> None:  # wakes a read blocked on a silent or dripping server
        expired.set()
        for sock in opened:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    timer = threading.Timer(deadline_s, cut_off)
    timer.daemon = True
    timer.start()
    try:
        conn.connect()
        opened.append(conn.sock)
        if expired.is_set():  # the deadline passed while connecting
            cut_off()
        conn.request("GET", parts.path.rstrip("/") + target,
                     headers={"Accept": "application/json"})
        resp = conn.getresponse()
        body = bytearray()
        while chunk := resp.read1(1 << 16):
            body += chunk
            if len(body) > MAX_BYTES:
                raise _fail(url, f"answer larger than {MAX_BYTES >> 20} MiB")
        if expired.is_set():  # the cut-off ended the read: what came is not the answer
            raise OSError("cut off")
        if resp.status != 200 and not body.lstrip().startswith(b"{"):  # no API's error
            raise _fail(url, f"HTTP {resp.status} {one_line(resp.reason, 80)}")
        return bytes(body)
    except (OSError, http.client.HTTPException, ValueError) as exc:
        # The socket's own timeout (deadline_s per operation) may fire before the timer:
        # either way the deadline has passed.
        if expired.is_set() or isinstance(exc, TimeoutError):
            raise _fail(url, f"no whole answer within {deadline_s:.0f} s") from None
        raise _fail(url, f"{type(exc).__name__}: {exc}") from None
    finally:
        timer.cancel()
        conn.close()


def query(url: str, expr: str, deadline_s: float = DEADLINE_S) -> list[dict[str, Any]]:
    """An instant query's result vector (``/api/v1/query``): a list of dict samples."""
    target = "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    raw = _get(url, target, deadline_s)
    try:
        data = json.loads(raw)
    except RecursionError:
        raise _fail(url, f"query {expr!r}: JSON nested too deeply") from None
    except ValueError as exc:
        raise _fail(url, f"query {expr!r}: not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("status") != "success":
        error = data.get("error") if isinstance(data, dict) else data
        raise _fail(url, f"query {expr!r} failed: {one_line(repr(error), 200)}")
    body = data.get("data")
    result = body.get("result") if isinstance(body, dict) else None
    if not isinstance(result, list):
        raise _fail(url, f"query {expr!r}: data.result: not a vector")
    for i, item in enumerate(result):
        if not isinstance(item, dict) or not isinstance(item.get("metric"), dict):
            raise _fail(url, f"query {expr!r}: data.result[{i}]: not a sample")
    return result


def _number(url: str, metric: str, item: dict[str, Any], lo: float, hi: float,
            low_open: bool = True) -> float:
    """The sample's value, checked: finite, above ``lo`` (or at it, ``low_open=False``),
    at most ``hi``; else one line naming the URL, the metric and the series."""
    value = item.get("value")
    where = f"{metric}{{instance={one_line(item['metric'].get('instance', '?'), MAX_LABEL)!r}}}"
    if not (isinstance(value, list) and len(value) == 2 and isinstance(value[1], str)):
        raise _fail(url, f"{where}: value: expected [time, \"number\"]")
    try:
        number = float(value[1])
    except ValueError:
        raise _fail(url, f"{where}: value {one_line(value[1], 40)!r} is not a number") from None
    below = number <= lo if low_open else number < lo
    if not math.isfinite(number) or below or number > hi:
        raise _fail(url, f"{where}: value {one_line(value[1], 40)!r} is not a usable "
                    f"figure (expected {'more than' if low_open else 'at least'} {lo:g} and "
                    f"at most {hi:g})")
    return number


def _labels(item: dict[str, Any], names: tuple[str, ...]) -> tuple[str, ...]:
    metric = item["metric"]
    return tuple(one_line(metric.get(k, ""), MAX_LABEL) for k in names)


def _by(url: str, metric: str, rows: list[dict[str, Any]], hi: float, *labels: str
        ) -> dict[tuple[str, ...], float]:
    return {_labels(r, labels): _number(url, metric, r, 0.0, hi) for r in rows}


def fleet_estimates(url: str, profile: str | None = None) -> list[NodeEstimate]:
    """Every node's judged estimates (basis node) in the Prometheus at ``url``; only the
    series of ``profile`` where the metric carries one."""
    key = ("instance", "cpu", "suite", "backend")
    node = 'qprof_vu_estimate_basis_info{basis="node"}'
    est = _by(url, "qprof_vu_estimate",
              query(url, f"qprof_vu_estimate and on (job, instance, cpu, suite, backend) "
                         f"{node}"), MAX_CONSTANT, *key)
    high = _by(url, "qprof_vu_estimate_ci_high", query(url, "qprof_vu_estimate_ci_high"),
               MAX_CONSTANT, *key)
    times = _by(url, "qprof_verify_seconds", query(url, "qprof_verify_seconds"),
                MAX_VERIFY_S, *key)
    where = f'{{profile="{profile}"}}' if profile else ""
    binding: dict[tuple[str, ...], bool] = {}
    for r in query(url, f"qprof_vu_covered{where}"):
        binding[_labels(r, ("instance", "cpu", "suite"))] = (
            r["metric"].get("binding", "true") != "false")
    out = []
    for (instance, cpu, suite, backend), value in sorted(est.items()):
        if (instance, cpu, suite, backend) not in times:
            continue
        if not cpu.isdigit() or int(cpu) > MAX_CPU:
            raise _fail(url, f"qprof_vu_estimate{{instance={instance!r}}}: cpu label "
                        f"{cpu!r} is not a CPU number")
        vu = math.ceil(value)
        top = max(math.ceil(high.get((instance, cpu, suite, backend), value)), vu)
        out.append(NodeEstimate(
            node=instance, cpu=int(cpu), suite=suite, backend=backend, vu_estimate=vu,
            vu_high=top, time_ns=times[(instance, cpu, suite, backend)] * 1e9,
            binds=binding.get((instance, cpu, suite), True),
            binding_why="as the node's daemon decided (qprof_vu_covered binding label)"))
    return out
