"""Recorded runs as run points: the JSONL source of `qprof trend RUN.jsonl...`.

One file is one run (`qprof check -o`, `qprof bench -o`, `qprof export`), read by
:func:`qprof.measure.jsonl.read_run` and turned into points by
:func:`qprof.consensus.trend.from_records.run_points` (the estimator `qprof check` uses).
``.xz`` and ``.gz`` files (archived runs, the tests' data) are expanded in memory, within a
size cap (nothing is left on disk when the reader is killed). A file that gives no point
is a :class:`RunFileError`, one line naming it.
"""

from __future__ import annotations

import lzma
import zlib
from dataclasses import dataclass
from pathlib import Path

from qprof.consensus.trend.from_records import run_points
from qprof.consensus.trend.model import RunPoint, SeriesKey
from qprof.measure.jsonl import RunData, read_run
from qprof.measure.units import NO_PROFILE_UNIT
from qprof.userfile import UserFileError, read_bounded

# A compressed run is read whole (an hour's check run: ~2 MB as xz) and may expand to at
# most this much: a decompression bomb ends here, not in memory or on disk.
MAX_COMPRESSED = 256 << 20
MAX_EXPANDED = 1 << 30
COMPRESSED = (".xz", ".gz")


class RunFileError(ValueError):
    """The file gives no run point; the message starts with its path."""


@dataclass(frozen=True)
class RunFile:
    path: str
    profile: str | None  # the profile the run was measured against (its Meta's)
    points: list[tuple[SeriesKey, RunPoint]]
    problems: list[str]  # bad lines skipped, "file:line: reason"
    run: RunData | None = None  # its records, when asked for (qprof history)


def _expand(path: Path) -> bytes:
    """The whole decompressed run: every gzip member and xz stream in turn (``gzip -c >>``,
    ``cat a.xz b.xz``; xz's stream padding and gzip's trailing zeros skipped), within the
    cap."""
    data = read_bounded(path, MAX_COMPRESSED, "compressed run")
    out: list[bytes] = []
    total = 0
    try:
        while True:
            unit: lzma.LZMADecompressor | zlib._Decompress = (
                lzma.LZMADecompressor() if path.suffix == ".xz"
                else zlib.decompressobj(wbits=31))  # gzip: its header and trailer
            out.append(unit.decompress(data, MAX_EXPANDED + 1 - total))
            total += len(out[-1])
            if total > MAX_EXPANDED:
                raise RunFileError(f"{path}: expands to more than {MAX_EXPANDED >> 20} MiB: "
                                   "not a run qprof reads")
            if not unit.eof:
                raise RunFileError(f"{path}: the compressed data ends early (a cut-off file)")
            data = unit.unused_data.lstrip(b"\0")
            if not data:
                return b"".join(out)
    except (lzma.LZMAError, zlib.error, EOFError) as exc:
        raise RunFileError(f"{path}: not {path.suffix[1:]} data ({exc})") from None


def read_run_file(path: str | Path, unit_suite: str | None = None,
                  with_run: bool = False) -> RunFile:
    """One recorded run's points, each CPU and backend one (``with_run``: its records
    too); the unit suite is the run's own (its settings) unless ``unit_suite`` is given."""
    p = Path(path)
    try:
        run = read_run(p, _expand(p) if p.suffix in COMPRESSED else None)
    except UserFileError as exc:
        raise RunFileError(str(exc)) from None
    except OSError as exc:
        raise RunFileError(f"{p}: {exc.strerror or exc}") from None
    problems = run.problems
    first = f" (first problem: {problems[0]})" if problems else ""
    if run.meta is None or not run.measurements:
        raise RunFileError(f"{p}: no meta line and measurements: not a recorded run{first}")
    if not run.complete:
        raise RunFileError(f"{p}: not read to its end: no estimate from part of a "
                           f"file{first}")
    if len(run.run_ids) > 1:
        raise RunFileError(f"{p}: holds {len(run.run_ids)} runs; one run per file (keep "
                           "each run's lines, its run_id, in a file of its own)")
    unit = unit_suite or run.meta.settings.unit_suite or NO_PROFILE_UNIT.suite
    points = run_points(run.records, unit_suite=unit)
    if not points:
        raise RunFileError(f"{p}: no CPU with the unit suite and another suite measured")
    return RunFile(path=str(p), profile=run.meta.profile, points=points, problems=problems,
                   run=run if with_run else None)
