"""Hash calls per SLH-DSA verification: qprof's count against an independent one.

The independent count is the ``slhdsa`` package's own verification with its F, H, T_l
and H_msg wrapped to count calls.  The wheel is compiled with mypyc (compiled calls
bypass a patched method), so the test loads the package's Python sources, shipped
beside the compiled modules, as a private copy and instruments that.  Random
signature bytes walk every layer the way a real signature does (verification has no
early exit), so 20 of them under random keys test the count without signing anything;
committed valid vectors are counted too.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import random
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import slhdsa

from qprof.verify.nb.slhdsa_params import PARAMS
from qprof.verify.slhdsa_calls import HashCalls, count_calls, node_steps, random_layer_steps, walk

SUITE = "SLH-DSA-SHAKE-128s"


class _SourcesFirst(importlib.abc.MetaPathFinder):
    """Find ``slhdsa`` modules as their .py sources, not the compiled extensions."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> Any:
        if fullname != "slhdsa" and not fullname.startswith("slhdsa."):
            return None
        rel = Path(*fullname.split("."))
        package = self.root / rel / "__init__.py"
        if package.is_file():
            return importlib.util.spec_from_file_location(
                fullname, package, submodule_search_locations=[str(package.parent)])
        module = self.root / rel.with_suffix(".py")
        return importlib.util.spec_from_file_location(fullname, module) if module.is_file() \
            else None


@pytest.fixture(scope="module")
def python_slhdsa() -> Iterator[ModuleType]:
    """The slhdsa package imported from its Python sources (sys.modules restored after)."""
    saved = {k: v for k, v in sys.modules.items() if k == "slhdsa" or k.startswith("slhdsa.")}
    for k in saved:
        del sys.modules[k]
    finder = _SourcesFirst(Path(slhdsa.__file__).resolve().parent.parent)
    sys.meta_path.insert(0, finder)
    try:
        module = importlib.import_module("slhdsa")
        importlib.import_module("slhdsa.lowlevel.parameters")
        yield module
    finally:
        sys.meta_path.remove(finder)
        for k in [k for k in sys.modules if k == "slhdsa" or k.startswith("slhdsa.")]:
            del sys.modules[k]
        sys.modules.update(saved)


@pytest.fixture
def reference_counts(python_slhdsa: ModuleType,
                     monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    counts: Counter[str] = Counter()
    shake = python_slhdsa.lowlevel.parameters.ShakeParameter
    assert not hasattr(shake.F, "__text_signature__")  # the Python method, not mypyc's
    for name in ("F", "H", "Tl", "Hmsg", "PRF", "PRFmsg"):
        original = getattr(shake, name)

        def counted(self: object, *args: object, _name: str = name,
                    _original: Any = original) -> bytes:
            counts[_name] += 1
            return bytes(_original(self, *args))

        monkeypatch.setattr(shake, name, counted)
    yield counts


def _reference(suite: str, pk: bytes, msg: bytes, sig: bytes, ctx: bytes,
               counts: Counter[str]) -> tuple[bool, HashCalls]:
    module = sys.modules["slhdsa"]
    counts.clear()
    par = getattr(module, "shake_" + suite.rsplit("-", 1)[1])
    valid = module.PublicKey.from_digest(pk, par).verify_pure(msg, sig, ctx)
    return valid, HashCalls(f=counts["F"], h=counts["H"], t=counts["Tl"], hmsg=counts["Hmsg"],
                            prf=counts["PRF"] + counts["PRFmsg"])


def test_counts_agree_with_the_reference_on_20_signatures(
        reference_counts: Counter[str]) -> None:
    rng = random.Random(20)
    p = PARAMS[SUITE]
    totals = set()
    for i in range(20):
        pk = rng.randbytes(p.public_key_bytes)
        sig = rng.randbytes(p.signature_bytes)
        msg = rng.randbytes(32)
        ctx = rng.randbytes(i % 3)
        valid, ref = _reference(SUITE, pk, msg, sig, ctx, reference_counts)
        got = count_calls(SUITE, pk, msg, sig, ctx)
        assert got == ref and not valid
        totals.add(got.total)
    assert len(totals) > 10  # the count follows each signature, it is not a constant


def test_valid_signatures_count_and_verify(reference_counts: Counter[str]) -> None:
    from tests.test_nb_slhdsa import vector

    for suite in (SUITE, "SLH-DSA-SHAKE-256f"):
        pk, msg, ctx, sig = vector(suite)
        w = walk(suite, pk, msg, sig, ctx)
        valid, ref = _reference(suite, pk, msg, sig, ctx, reference_counts)
        assert w.valid and valid and w.calls == ref
        assert [node_steps(m) for m in w.layer_messages] == list(w.layer_steps)


def test_layer_distribution_matches_fips205_bounds() -> None:
    d = random_layer_steps(16)
    assert 266 < d.mean < 268 and d.most == 510  # every digit 0: 32 * 15 + checksum
    p = PARAMS[SUITE]
    assert node_steps(bytes(16)) == d.most and node_steps(b"\xff" * 16) < d.mean
    assert p.d * d.mean + p.k + p.k * p.a + p.d * p.hp + 1 + p.d + 1 == pytest.approx(2124, abs=1)


def test_bad_lengths_raise() -> None:
    with pytest.raises(ValueError):
        walk(SUITE, b"", b"", b"")
    with pytest.raises(ValueError):
        walk("ML-DSA-44", b"", b"", b"")
