"""A ``qprof block --json`` file read back (``qprof report --block``): a bounded read
(a regular file of at most MAX_BYTES: ``--block /dev/zero`` read until MemoryError) and
every field of every row checked into :class:`BlockResult` (``{"results": [1]}``, a
string ``signatures``, deep nesting were tracebacks). Anything wrong is one BlockError
naming the file and the field."""

from __future__ import annotations

from pathlib import Path

from qprof.measure.block import BlockError, BlockResult, ThreadSpan
from qprof.measure.fields import FieldError, Fields
from qprof.userfile import UserFileError, read_json

# A block file holds a row per scope and suite with its threads and repeats: kilobytes.
MAX_BYTES = 16 << 20
MAX_CPUS = 65536


def _opt_pair(f: Fields, key: str) -> list[float] | None:
    if not f.has(key):
        return None
    pair = f.numbers(key, above=0.0)
    if len(pair) != 2:
        raise FieldError(f"{f.name(key)}: must be two numbers, got {len(pair)}")
    return pair


def _ints(f: Fields, key: str, at_least: int = 0) -> list[int]:
    values = f.array(key)
    return [Fields({"v": v}, f"{f.name(key)}[{i}]").integer("v", at_least=at_least)
            for i, v in enumerate(values)] if values else []


def _thread(f: Fields) -> ThreadSpan:
    return ThreadSpan(f.integer("cpu", at_least=0, at_most=MAX_CPUS),
                      f.integer("signatures", at_least=0), f.number("start_s"),
                      f.number("end_s"))


def _composition(f: Fields) -> list[tuple[str, int]]:
    out = []
    for i, item in enumerate(f.array("composition") if f.has("composition") else []):
        where = f"{f.name('composition')}[{i}]"
        if not (isinstance(item, list) and len(item) == 2):
            raise FieldError(f"{where}: must be [suite, spends]")
        pair = Fields({"suite": item[0], "spends": item[1]}, where)
        out.append((pair.string("suite", 100), pair.integer("spends", at_least=1)))
    return out


def _row(f: Fields) -> BlockResult:
    second = f.string("second", 100) if f.has("second") else None
    return BlockResult(
        suite=f.string("suite", 1000), backend=f.string("backend", 100),
        mode=f.string("mode", 100), second=second,
        signatures=f.integer("signatures", at_least=1),
        distinct_signatures=f.integer("distinct_signatures", at_least=0),
        scope=f.string("scope", 100), cpus=_ints(f, "cpus"),
        wall_s=f.number("wall_s", above=0.0),
        single_core_estimate_s=f.number("single_core_estimate_s", at_least=0.0),
        speedup=f.number("speedup", at_least=0.0),
        block_interval_s=f.opt_number("block_interval_s", above=0.0),
        interval_fraction=f.opt_number("interval_fraction", at_least=0.0),
        all_verified=f.boolean("all_verified"), accepted=f.integer("accepted", at_least=0),
        rejected=f.integer("rejected", at_least=0),
        wrong_verdicts=_ints(f, "wrong_verdicts"),
        disagreements=f.integer("disagreements", at_least=0),
        threads=[_thread(t) for t in f.objects("threads", MAX_CPUS)]
        if f.has("threads") else [],
        wall_runs_s=f.numbers("wall_runs_s", above=0.0) if f.has("wall_runs_s") else [],
        wall_median_s=f.opt_number("wall_median_s", above=0.0),
        wall_ci_s=_opt_pair(f, "wall_ci_s"),
        vs_single=f.opt_number("vs_single", above=0.0),
        vs_single_ci=_opt_pair(f, "vs_single_ci"),
        composition=_composition(f))


def read_block_results(path: str | Path) -> list[BlockResult]:
    """The rows of a ``qprof block --json`` file; BlockError says what is wrong."""
    try:
        top = Fields(read_json(path, MAX_BYTES, "qprof block --json file"), "")
        return [_row(row) for row in top.objects("results", 100_000)]
    except UserFileError as exc:
        raise BlockError(str(exc)) from None
    except FieldError as exc:
        raise BlockError(f"{path}: not a qprof block --json file: {exc}") from None
