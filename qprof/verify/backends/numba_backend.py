"""Numba kernels written for qprof (``qprof.verify.nb``): ML-DSA and SLH-DSA-SHAKE.

Wraps ``qprof.verify.nb.mldsa.mldsa_verify(level, pk, msg, sig, ctx) -> bool`` and
``qprof.verify.nb.slhdsa.slhdsa_verify(params_name, pk, msg, sig, ctx) -> bool``.
Kernels are ``njit(cache=True, nogil=True)``: the first call in a process compiles or
loads them from the numba cache (seconds), so call ``warm_up(suite)`` before timing.
The kernel modules are imported lazily (importing numba costs ~0.5 s); when a module
or function is missing this backend reports those suites unavailable with the reason.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
from collections.abc import Callable
from typing import Any

from qprof.verify.availability import distribution_version
from qprof.verify.base import (
    BackendStatus,
    BackendUnavailable,
    UnknownSuiteError,
    Verifier,
)
from qprof.verify.suites import SUITES, SuiteInfo

NAME = "numba"

# family -> (kernel module, verify function name)
_KERNELS: dict[str, tuple[str, str]] = {
    "ML-DSA": ("qprof.verify.nb.mldsa", "mldsa_verify"),
    "SLH-DSA": ("qprof.verify.nb.slhdsa", "slhdsa_verify"),
}


def _kernel(family: str) -> Callable[..., Any]:
    """The kernel's verify function, or ``BackendUnavailable`` saying what is missing."""
    module_name, func_name = _KERNELS[family]
    if importlib.util.find_spec("numba") is None:
        raise BackendUnavailable(
            "numba: python package 'numba' is not installed; pip install numba"
        )
    try:
        spec = importlib.util.find_spec(module_name)
    except ImportError:
        spec = None
    if spec is None:
        raise BackendUnavailable(f"numba: kernel module {module_name} is not present")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise BackendUnavailable(
            f"numba: kernel module {module_name} failed to import: {type(exc).__name__}: {exc}"
        ) from exc
    func = getattr(module, func_name, None)
    if not callable(func):
        raise BackendUnavailable(f"numba: {module_name} has no {func_name}()")
    return func


def probe() -> BackendStatus:
    numba_version = distribution_version("numba")
    if numba_version is None:
        return BackendStatus(
            NAME, False, "numba: python package 'numba' is not installed; pip install numba"
        )
    version = f"numba {numba_version}"
    suites: list[str] = []
    details: dict[str, str] = {}
    for family in _KERNELS:
        try:
            _kernel(family)
        except BackendUnavailable as exc:
            details[family] = str(exc)
            continue
        suites.extend(name for name, s in SUITES.items() if s.family == family)
    if not suites:
        reasons = "; ".join(details[f] for f in _KERNELS)
        return BackendStatus(NAME, False, reasons, version=version, details=details)
    return BackendStatus(NAME, True, "ok", version, tuple(suites), details=details)


class NumbaVerifier(Verifier):
    backend = NAME

    def __init__(self, suite: SuiteInfo) -> None:
        super().__init__(suite)
        self._kernel = _kernel(suite.family)
        self._params = suite.numba_params

    def _verify(self, public_key: bytes, message: bytes, signature: bytes, context: bytes) -> bool:
        return bool(self._kernel(self._params, public_key, message, signature, context))

    def warm_up(self) -> None:
        warm_up(self.suite_name)


def warm_up(suite: str) -> None:
    """Compile (or load from the numba cache) the kernels for ``suite``.

    Uses the kernel module's own ``warm_up(params)`` when it has one; otherwise verifies
    an all-zero key/signature once, which runs every stage up to the final comparison.
    """
    info = SUITES.get(suite)
    if info is None:
        raise UnknownSuiteError(suite)
    kernel = _kernel(info.family)
    module = importlib.import_module(_KERNELS[info.family][0])
    own = getattr(module, "warm_up", None)
    if callable(own):
        # nb.slhdsa.warm_up(params) picks a parameter set; nb.mldsa.warm_up() does all.
        if inspect.signature(own).parameters:
            own(info.numba_params)
        else:
            own()
        return
    # Rejecting the dummy input is fine (and expected); compilation happened anyway.
    with contextlib.suppress(Exception):
        kernel(info.numba_params, bytes(info.pk_size), b"warm-up", bytes(info.sig_size), b"")


def make_verifier(suite: SuiteInfo) -> NumbaVerifier:
    return NumbaVerifier(suite)
