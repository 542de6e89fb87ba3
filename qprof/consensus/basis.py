"""Which figures may carry a coverage verdict (✓/✗): the one rule, used everywhere.

A profile's constants are held to one verifier, the one a node runs (``Profile.verifier``,
qanum: liboqs). Its figures, alone, get the verdict users act on ("node"). A dual pair
led by that verifier in enforce mode (backend "liboqs+numba", operation
``dual_enforce``) gets its own, labelled verdict: what a node would pay with the second
verifier beside its own ("dual"). Anything else, e.g. numba measured alone, no node runs:
its figures are shown and exported for comparison, never as covered or not covered.
"""

from __future__ import annotations

from typing import Literal

from qprof.consensus.profiles import Profile

Basis = Literal["node", "dual", "comparison"]

# Operations whose cost a block pays per signature: alone, or both verifiers (enforce).
DUAL_VERDICT_OPERATION = "dual_enforce"


def verdict_basis(profile: Profile, backend: str, operation: str = "verify") -> Basis:
    if backend == profile.verifier and operation == "verify":
        return "node"
    if backend.startswith(profile.verifier + "+") and operation == DUAL_VERDICT_OPERATION:
        return "dual"
    return "comparison"


def basis_label(profile: Profile, backend: str, basis: Basis) -> str:
    """What the figures are, in words a reader of any view needs beside them."""
    if basis == "node":
        return f"{backend}, the verifier {profile.name}'s constants are held to"
    if basis == "dual":
        second = backend.split("+", 1)[1]
        return (f"{backend} dual enforce: what a node would pay with {second} as its "
                "second verifier")
    return f"{backend} alone: not what a node runs (comparison, no verdict)"


def comparison_only_reason(profile: Profile, backend: str) -> str:
    """Why a run on ``backend`` alone gives no verdict, and what to do about it."""
    return (f"{backend} alone is not what a node runs: {profile.name}'s constants are held to "
            f"{profile.verifier}, so its figures carry no verdict")
