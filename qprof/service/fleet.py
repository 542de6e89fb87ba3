"""A fleet's estimates from its Prometheus (`qprof calibrate --prometheus URL`).

Every node's daemon exports, per CPU and suite, the estimate of the verifier the profile
is held to (``qprof_vu_estimate`` with ``qprof_vu_estimate_basis_info{basis="node"}``),
the top of its 95 % interval (``qprof_vu_estimate_ci_high``), the verify time it used
(``qprof_verify_seconds``) and whether the ratio binds on that CPU as the daemon's profile
decided it (``qprof_vu_covered``'s ``binding`` label). The HTTP API's instant queries
give them back; a node is its ``instance`` label.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from qprof.consensus.calibrate import NodeEstimate


class FleetError(RuntimeError):
    """The Prometheus server cannot be read (the message says which URL and why)."""


def query(url: str, expr: str, timeout: float = 15.0) -> list[dict[str, Any]]:
    """An instant query's result vector (``/api/v1/query``)."""
    full = url.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        with urllib.request.urlopen(full, timeout=timeout) as resp:  # noqa: S310 - the user's URL
            data = json.loads(resp.read().decode())
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise FleetError(f"{url}: {exc}") from exc
    if not isinstance(data, dict) or data.get("status") != "success":
        raise FleetError(f"{url}: query {expr!r} failed: "
                         f"{data.get('error') if isinstance(data, dict) else data!r}")
    result = data.get("data", {}).get("result", [])
    if not isinstance(result, list):
        raise FleetError(f"{url}: query {expr!r}: not a vector")
    return result


def _by(rows: list[dict[str, Any]], *labels: str) -> dict[tuple[str, ...], float]:
    out = {}
    for r in rows:
        metric = r.get("metric", {})
        try:
            out[tuple(str(metric.get(k, "")) for k in labels)] = float(r["value"][1])
        except (KeyError, IndexError, TypeError, ValueError):
            continue  # a sample without a number: nothing to propose from
    return out


def fleet_estimates(url: str, profile: str | None = None) -> list[NodeEstimate]:
    """Every node's judged estimates (basis node) in the Prometheus at ``url``; only the
    series of ``profile`` where the metric carries one."""
    key = ("instance", "cpu", "suite", "backend")
    node = 'qprof_vu_estimate_basis_info{basis="node"}'
    est = _by(query(url, f"qprof_vu_estimate and on (job, instance, cpu, suite, backend) "
                         f"{node}"), *key)
    high = _by(query(url, "qprof_vu_estimate_ci_high"), *key)
    times = _by(query(url, "qprof_verify_seconds"), *key)
    where = f'{{profile="{profile}"}}' if profile else ""
    binding: dict[tuple[str, str, str], bool] = {}
    for r in query(url, f"qprof_vu_covered{where}"):
        m = r.get("metric", {})
        binding[(m.get("instance", ""), m.get("cpu", ""), m.get("suite", ""))] = (
            m.get("binding", "true") != "false")
    out = []
    for (instance, cpu, suite, backend), value in sorted(est.items()):
        if (instance, cpu, suite, backend) not in times:
            continue
        binds = binding.get((instance, cpu, suite), True)
        vu = int(value)
        out.append(NodeEstimate(
            node=instance, cpu=int(cpu), suite=suite, backend=backend, vu_estimate=vu,
            vu_high=int(high.get((instance, cpu, suite, backend), vu)),
            time_ns=times[(instance, cpu, suite, backend)] * 1e9, binds=binds,
            binding_why="as the node's daemon decided (qprof_vu_covered binding label)"))
    return out
