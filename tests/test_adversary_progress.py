"""`qprof adversary`'s progress bars (issue 52): the count, the rate and the ETA while
signing, one line per quarter off a terminal, and a bar by the clock while grinding."""

from __future__ import annotations

import io
import time

from qprof.measure.adversary_progress import Bar, ClockBar, bar_line


def test_the_line_has_count_rate_and_eta() -> None:
    line = bar_line("signing SLH-DSA-SHAKE-256s pool", 16, 64, 32.0, "")
    assert line == ("signing SLH-DSA-SHAKE-256s pool  [######------------------]  16/64  "
                    "0.5/s  ETA 1m36s")
    assert bar_line("x", 0, 10, 0.0, "").endswith("0/10  0/s  ETA -")
    assert bar_line("grinding", 30, 30, 30.0, "s").endswith("30/30 s  ETA 0s")


def test_off_a_terminal_one_line_per_quarter() -> None:
    out = io.StringIO()
    clock = iter(float(i) for i in range(100))
    bar = Bar("signing", 64, out, now=lambda: next(clock))
    for _ in range(64):
        bar.step()
    bar.close()
    lines = out.getvalue().splitlines()
    assert [line.split("]  ")[1].split()[0] for line in lines] == [
        "0/64", "16/64", "32/64", "48/64", "64/64"]
    assert "\r" not in out.getvalue()


def test_a_count_stopped_short_ends_on_its_last_state() -> None:
    out = io.StringIO()
    bar = Bar("signing SLH-DSA-SHAKE-256s random", 16, out)
    for _ in range(5):  # the budget allowed five
        bar.step()
    bar.close()
    assert out.getvalue().splitlines()[-1].split("]  ")[1].startswith("5/16  ")


def test_the_clock_bar_fills_with_the_time() -> None:
    out = io.StringIO()
    with ClockBar("grinding SLH-DSA-SHAKE-128s valid", 0.2, out):
        time.sleep(0.3)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("grinding SLH-DSA-SHAKE-128s valid  [---")
    assert "[########################]" in lines[-1]
