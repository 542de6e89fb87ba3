"""JSONL runs: write records one line at a time, read them back with every bad line
reported as ``file:line: reason`` (skipped and counted, never silently dropped)."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TextIO, TypeVar

from qprof.atomicfile import open_new
from qprof.measure.config import RunSummary
from qprof.measure.records import (
    Disagreement,
    End,
    Env,
    FreqSample,
    Measurement,
    Meta,
    Note,
    Record,
    RecordError,
    record_from_dict,
)
from qprof.userfile import UserFileError, open_text


class JsonlSink:
    """Writes records to a new JSONL file, flushed line by line (a crash loses nothing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fh: IO[str] | None = open_new(self.path)
        self._lock = threading.Lock()

    def __call__(self, record: Record) -> None:
        line = record.to_json()
        with self._lock:
            if self._fh is None:
                raise ValueError(f"{self.path}: sink already closed")
            self._fh.write(line + "\n")
            self._fh.flush()

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None

    def __enter__(self) -> JsonlSink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


R = TypeVar("R", bound=Record)

@dataclass
class RunData:
    path: Path
    meta: Meta | None = None
    records: list[Record] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # "file:line: reason"
    bad_lines: int = 0
    complete: bool = True  # False: reading stopped before the end of the file

    def _of(self, cls: type[R]) -> list[R]:
        return [r for r in self.records if isinstance(r, cls)]

    @property
    def measurements(self) -> list[Measurement]:
        return self._of(Measurement)

    @property
    def notes(self) -> list[Note]:
        return self._of(Note)

    @property
    def envs(self) -> list[Env]:
        return self._of(Env)

    @property
    def freqs(self) -> list[FreqSample]:
        return self._of(FreqSample)

    @property
    def disagreements(self) -> list[Disagreement]:
        return self._of(Disagreement)

    @property
    def end(self) -> End | None:
        ends = self._of(End)
        return ends[-1] if ends else None

    @property
    def run_ids(self) -> list[str]:
        """The runs whose measurements the file holds, in order (one, unless two runs
        were appended to one file)."""
        return list(dict.fromkeys(m.run_id for m in self.measurements))

    def summary(self) -> RunSummary:
        """What the engine returned when it recorded this run, from the records alone:
        status and reason from the end line, the CPUs skipped or aborted from their
        notes, the elapsed time from the meta and end lines' clocks."""
        meta, end = self.meta, self.end
        aborted: dict[int, str] = {}
        for n in self.notes:
            if n.kind == "cpu_aborted" and n.cpu is not None:
                aborted.setdefault(n.cpu, n.text.split(": ", 1)[-1])
        cpus = [row.cpu for row in (meta.cpus if meta else []) if row.cpu is not None]
        cpus += sorted(({m.cpu for m in self.measurements} | set(aborted)) - set(cpus))
        run_id = meta.run_id if meta else (self.run_ids or [""])[0]
        status, reason = (("partial", "no end line: the run was cut short") if end is None
                          else (end.status, end.reason))
        elapsed = (end.finished_at - meta.started_at) if meta and end else 0.0
        return RunSummary(
            run_id=run_id, status=status, reason=reason, elapsed_s=max(elapsed, 0.0),
            cpus=list(dict.fromkeys(cpus)), aborted_cpus=aborted,
            measurements=self.measurements,
            checks=end.checks if end else 0, disagreements=end.disagreements if end else 0,
            notes=[n.text for n in self.notes])


# The longest line a run holds is a measurement with its samples or an env snapshot
# (~100 kB); a longer one is skipped, and a file that has no newline for as long again
# (/dev/zero, a binary file) is not read further.
MAX_LINE_CHARS = 8 << 20


def _lines(fh: TextIO, run: RunData) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line up to MAX_LINE_CHARS, in bounded memory."""
    lineno = 0
    while True:
        line = fh.readline(MAX_LINE_CHARS + 1)
        if not line:
            return
        lineno += 1
        if len(line) <= MAX_LINE_CHARS or line.endswith("\n"):
            yield lineno, line
            continue
        run.problems.append(f"{run.path}:{lineno}: line longer than {MAX_LINE_CHARS} "
                            "characters: skipped")
        run.bad_lines += 1
        skipped = len(line)
        while not line.endswith("\n"):
            line = fh.readline(MAX_LINE_CHARS)
            skipped += len(line)
            if not line:
                return
            if skipped > 2 * MAX_LINE_CHARS:
                run.problems.append(f"{run.path}:{lineno}: no line end in "
                                    f"{skipped} characters: not a JSONL run, the rest "
                                    "is not read")
                run.complete = False
                return


def read_run(path: str | Path, content: bytes | None = None) -> RunData:
    """Read one JSONL run: the file at ``path``, or ``content``, its lines already read (a
    compressed run expanded in memory: nothing of it is left on disk), named ``path``.
    Raises OSError only when the file cannot be opened."""
    p = Path(path)
    run = RunData(path=p)
    fh: TextIO
    if content is not None:
        fh = io.TextIOWrapper(io.BytesIO(content), encoding="utf-8", errors="replace")
    else:
        try:
            fh = open_text(p, "JSONL run")  # a FIFO would wait for a writer
        except UserFileError as exc:
            raise OSError(str(exc).removeprefix(f"{p}: ")) from None
    with fh:
        for lineno, line in _lines(fh, run):
            text = line.strip()
            if not text:
                continue
            where = f"{p}:{lineno}"
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                run.problems.append(f"{where}: not valid JSON ({exc.msg}, column {exc.colno})")
                run.bad_lines += 1
                continue
            except (ValueError, RecursionError) as exc:  # 5000-digit numbers, [[[[...
                why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
                run.problems.append(f"{where}: not usable JSON ({why[:80]})")
                run.bad_lines += 1
                continue
            try:
                rec = record_from_dict(data)
            except RecordError as exc:
                run.problems.append(f"{where}: {exc}")
                run.bad_lines += 1
                continue
            if isinstance(rec, Meta):
                if run.meta is not None:
                    run.problems.append(f"{where}: second meta line ignored")
                    run.bad_lines += 1
                    continue
                run.meta = rec
            run.records.append(rec)
    if run.meta is None:
        run.problems.append(f"{p}: no meta line: machine and method unknown")
    if run.end is None and run.records:
        run.problems.append(f"{p}: no end line: the run was cut short")
    return run
