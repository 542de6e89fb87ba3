"""The monitor in Textual's headless pilot: rows, keys, coverage from a seeded store."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_tui_helpers import (
    BIG_LITTLE,
    FROZEN_AT,
    GOLD_CAPPED_MEDIANS,
    THIS_VM,
    fixture_root,
    frozen_config,
    seed_store,
)
from textual.widgets import DataTable

from qprof.cli import main as qprof_main
from qprof.tui.app import MonitorApp
from qprof.tui.model import UNSURE_CELL, Progress
from qprof.tui.widgets.choice_screen import ChoiceScreen
from qprof.tui.widgets.core_table import CoreTable
from qprof.tui.widgets.help_screen import HelpScreen
from qprof.verify.base import BACKEND_NAMES

pytestmark = pytest.mark.timeout(60)


def rows_of(table: DataTable) -> list[list[str]]:
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


def coverage_rows(app: MonitorApp) -> list[list[str]]:
    return rows_of(app.query_one("#coverage-table", DataTable))


def run(coro) -> None:  # noqa: ANN001 - a coroutine
    asyncio.run(coro)


async def settle(pilot) -> None:  # noqa: ANN001 - a textual Pilot
    """Wait until the first frame is drawn and the coverage evaluation (a worker that
    starts after it) has landed on screen."""
    app = pilot.app
    for _ in range(600):  # bounded: ~30 s
        await pilot.pause(0.05)
        if app.first_frame_at is not None and app._evaluating is None:
            break
    await pilot.pause()


def test_table_lists_big_little_cores_with_designs_and_caps() -> None:
    root = fixture_root(BIG_LITTLE)

    async def scenario() -> None:
        app = MonitorApp(frozen_config(root))
        async with app.run_test(size=(220, 40)) as pilot:
            await pilot.pause()
            rows = rows_of(app.query_one(CoreTable))
            assert [r[0] for r in rows] == [str(i) for i in range(8)]
            silver, gold = rows[2], rows[6]
            assert silver[2] == "Cortex-A55" and silver[3] == "eff"
            assert silver[-1] == "Kryo 4XX Silver"
            assert (silver[5], silver[6], silver[7]) == ("1.21", "1.80", "")
            assert gold[2] == "Cortex-A77" and gold[3] == "perf"
            # Capped Gold: max shown against the hardware max, the cap in words.
            assert (gold[5], gold[6], gold[7]) == ("1.08", "1.08/2.42", "⚠ cap ×2.24 policy")
            assert all(r[4] == "schedutil" for r in rows)
            # A snapshot of another machine: no costs, and the panel says why.
            assert app.frame is not None and "costs not measured here" in (
                app.frame.coverage_note or "")
            assert all(r[7] == "not measured here" for r in coverage_rows(app))
            assert len(coverage_rows(app)) == 8  # 4 suites × 2 clusters, never hidden

    run(scenario())


def test_coverage_panel_from_seeded_store(tmp_path: Path) -> None:
    root = fixture_root(BIG_LITTLE)
    db = seed_store(tmp_path / "q.db", cpu=2)  # Silver medians of the seeds
    seed_store(db, cpu=6, medians=GOLD_CAPPED_MEDIANS, capped=True, cap_factor=2.24,
               run_id="seed-gold")

    async def scenario() -> None:
        app = MonitorApp(frozen_config(root, store=db))
        async with app.run_test(size=(220, 40)) as pilot:
            await settle(pilot)
            rows = {(r[0], r[1].split()[0]): r for r in coverage_rows(app)}
            mldsa87 = rows[("ML-DSA-87", "cl0")]
            assert (mldsa87[3], mldsa87[4], mldsa87[5], mldsa87[6], mldsa87[7]) == (
                "med", "286", "290", "+4", "✓ yes")
            slh = rows[("SLH-128s", "cl0")]
            assert (slh[4], slh[5], slh[6], slh[7]) == ("1576", "1200", "-376", "✗ NO")
            assert slh[9] == "499 ms"  # 166 signatures (200000 // 1200) × 3.005 ms
            gold = rows[("ML-DSA-87", "cl1")]
            assert gold[1].endswith("@6") and gold[8] == "⚠ capped ×2.24"
            # The per-core table carries the medians and VU estimates of measured cores,
            # and the statistic `qprof check` compared there.
            cores = rows_of(app.query_one(CoreTable))
            assert cores[2][10] == "190.8 (100)" and cores[2][11] == "545.3 (286)"
            assert cores[2][9] == "med" and cores[0][9] == "—" and cores[0][10] == "—"

    run(scenario())


def test_numba_alone_shows_figures_and_no_verdict(tmp_path: Path) -> None:
    """Without liboqs the monitor measures with numba: estimates, never ✓/✗ (qanum's
    constants are held to liboqs, the node's verifier)."""
    root = fixture_root(BIG_LITTLE)
    db = seed_store(tmp_path / "q.db", cpu=2, backend="numba")

    async def scenario() -> None:
        app = MonitorApp(frozen_config(root, store=db, backend="numba"))
        async with app.run_test(size=(220, 40)) as pilot:
            await settle(pilot)
            rows = {(r[0], r[1].split()[0]): r for r in coverage_rows(app)}
            slh = rows[("SLH-128s", "cl0")]
            assert (slh[4], slh[6], slh[7]) == ("1576", "—", "comparison only")
            title = str(app.query_one("#coverage-title").render())
            assert "numba alone: not what a node runs" in title
            text = title + repr(list(rows.values()))
            assert "✓" not in text and "✗" not in text
            from qprof.tui.report import report_markdown

            assert app.frame is not None
            report = report_markdown(app.frame, "qanum-2026-10-14")
            assert "✓" not in report and "✗" not in report
            assert "numba alone: not what a node runs" in report

    run(scenario())


def test_keys_do_what_the_help_says(tmp_path: Path) -> None:
    root = fixture_root(BIG_LITTLE)
    db = seed_store(tmp_path / "q.db", cpu=2)

    async def scenario() -> None:
        app = MonitorApp(frozen_config(root, store=db, export_dir=tmp_path / "reports"))
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            # ? opens the help, Esc closes it.
            await pilot.press("question_mark")
            assert isinstance(app.screen, HelpScreen)
            await pilot.press("escape")
            assert not isinstance(app.screen, HelpScreen)
            # p switches profile: qanum raised SLH-DSA-128s to 1600, so it is covered.
            await pilot.press("p")
            assert isinstance(app.screen, ChoiceScreen)
            names = [key for key, _, _ in app.screen.choices]
            assert "qanum" in names
            app.screen.dismiss("qanum")
            await settle(pilot)
            assert app.collector.profile.name == "qanum"
            slh = next(r for r in coverage_rows(app) if r[0] == "SLH-128s")
            assert (slh[5], slh[7]) == ("1600", "✓ yes")
            # e exports a Markdown report, the HTML page beside it, and says where.
            await pilot.press("e")
            assert app.last_export is not None and app.last_export.parent == (
                tmp_path / "reports").resolve()
            text = app.last_export.read_text()
            assert "SLH-DSA-SHAKE-128s" in text and "✓ yes" in text and "Cortex-A77" in text
            # Both files written are named, by their full paths.
            md, page_path = app.last_export, app.last_export.with_suffix(".html")
            assert any(f"report written: {md} and {page_path}" in a.message
                       for a in app.frame.alerts)
            page = app.last_export.with_suffix(".html").read_text()  # charts beside it
            assert page.count("<svg ") >= 3 and "SLH-DSA-SHAKE-128s" in page
            # b on a --root snapshot with an explicit store: cannot measure another machine.
            await pilot.press("b")
            assert app.measuring_cpu is None
            # Row selection follows the arrow keys (what b measures).
            await pilot.press("down", "down")
            assert app.query_one(CoreTable).selected_cpu() == 2
            await pilot.press("q")
        assert app.return_code == 0

    run(scenario())


def test_backend_key_lists_backends_with_reasons() -> None:
    """`v` probes the real backends (off the UI thread) and offers the usable ones; the
    unusable ones are listed, disabled, with the reason."""
    root = fixture_root(THIS_VM)

    async def scenario() -> None:
        app = MonitorApp(frozen_config(root))
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            await pilot.press("v")
            for _ in range(300):  # bounded: the probe imports oqs/numba, ~1-3 s
                if isinstance(app.screen, ChoiceScreen):
                    break
                await pilot.pause(0.1)
            assert isinstance(app.screen, ChoiceScreen)
            choices = {key: (label, enabled) for key, label, enabled in app.screen.choices}
            assert set(choices) == set(BACKEND_NAMES)
            for _key, (label, enabled) in choices.items():
                assert enabled or "unavailable: " in label
            usable = [k for k, (_, enabled) in choices.items() if enabled]
            if usable:
                app.screen.dismiss(usable[-1])
                await pilot.pause()
                assert app.collector.backend == usable[-1]
                assert app.frame.machine.backend == usable[-1]

    run(scenario())


def test_vm_without_cpufreq_fits_80x24() -> None:
    root = fixture_root(THIS_VM)

    async def scenario() -> None:
        app = MonitorApp(frozen_config(root))
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            table = app.query_one(CoreTable)
            rows = rows_of(table)
            assert len(rows) == 2
            # Only the columns that fit whole (issue 52): every header is a whole label.
            labels = [str(c.label) for c in table.ordered_columns]
            assert labels[0] == "CPU" and all(len(x) > 2 or x == "Cl" for x in labels)
            assert sum(c.get_render_width(table) for c in table.ordered_columns) <= 80
            assert app.query_one("#coverage-table", DataTable).region.height >= 3
        app = MonitorApp(frozen_config(root))
        async with app.run_test(size=(220, 24)) as pilot:
            await pilot.pause()
            rows = rows_of(app.query_one(CoreTable))
            assert rows[0][6] == "—" and rows[0][7] == "n/a"  # no cpufreq: said, not guessed

    run(scenario())


def test_no_color_keeps_the_meaning(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    root = fixture_root(BIG_LITTLE)
    db = seed_store(tmp_path / "q.db", cpu=2)
    monkeypatch.setenv("NO_COLOR", "1")

    async def scenario() -> None:
        app = MonitorApp(frozen_config(root, store=db))
        async with app.run_test(size=(120, 30)) as pilot:
            await settle(pilot)
            assert app.no_color
            marks = {r[7] for r in coverage_rows(app)}
            assert {"✓ yes", "✗ NO", "not measured yet"} <= marks

    run(scenario())


def test_bad_root_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert qprof_main(["monitor", "--root", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("qprof monitor:") and "Traceback" not in err


TINY_PROFILE = Path(__file__).resolve().parent / "fixtures" / "tui" / "tiny-profile.toml"


@pytest.mark.fresh
@pytest.mark.timeout(120)
def test_b_measures_the_selected_core_without_blocking(tmp_path: Path) -> None:
    """Standalone on this machine: `b` runs the real engine (pyperf workers) in a thread
    worker, the progress bar shows, and the result lands in the store and the panel."""
    from qprof.verify import backend_status

    status = backend_status("liboqs")
    if not status.available:
        pytest.skip(status.reason)
    db = tmp_path / "monitor.db"
    config = frozen_config(Path("/"), store=db, profile=str(TINY_PROFILE), live=True,
                           measure_mode="quick", measure_every_s=3600.0)

    async def scenario() -> None:
        app = MonitorApp(config)
        seen_progress: list[str] = []
        show_progress = app._on_progress

        def on_progress(progress: Progress) -> None:  # every event the engine sends
            seen_progress.append(progress.item)
            show_progress(progress)

        app._on_progress = on_progress  # type: ignore[method-assign]
        async with app.run_test(size=(220, 36)) as pilot:
            await pilot.pause()
            cpu = app.query_one(CoreTable).selected_cpu()
            await pilot.press("b")
            assert app.measuring_cpu == cpu
            # The bar shows at once (a quick measurement may end before the loop below).
            assert app.progress is not None
            seen_progress.append(app.progress.item)
            # The UI keeps answering while the engine works: help opens and closes.
            await pilot.press("question_mark")
            assert isinstance(app.screen, HelpScreen)
            await pilot.press("escape")
            for _ in range(900):  # bounded: at most ~90 s
                if app.measuring_cpu is None:
                    break
                await pilot.pause(0.1)
            assert app.measuring_cpu is None, "measurement did not finish"
            assert seen_progress
            await settle(pilot)
            rows = {r[0]: r for r in coverage_rows(app)}
            assert rows["ML-DSA-44"][4] == "100" and rows["ML-DSA-44"][7] == "the unit suite"
            # Measured, whichever it is: five quick rounds beside a loaded CPU can give an
            # interval that straddles the constant, and then the cell says so, as `qprof
            # check` would.
            assert rows["ML-DSA-87"][7].split(" (")[0] in ("✓ yes", "✗ NO", UNSURE_CELL)
            assert rows["ML-DSA-87"][3] in ("med", "p10", "paired")  # as `qprof check` chose
            assert any(a.kind == "measured" for a in app.frame.alerts), app.frame.alerts
            # The slow schedule: when it is due, the first core of a cluster is measured.
            assert app._next_scheduled is not None
            app._next_scheduled = 0.0  # due now
            app.refresh_frame()
            assert app.measuring_cpu == app._cluster_firsts()[0]
            assert any(a.kind == "measure_started" and a.message.startswith("scheduled")
                       for a in app.frame.alerts + tuple(app.collector._local_alerts))
            for _ in range(900):
                if app.measuring_cpu is None:
                    break
                await pilot.pause(0.1)
            assert app.measuring_cpu is None
            assert app._next_scheduled > 0  # and the next one is an interval away
        from qprof.service.store import Store

        stored = Store(db, readonly=True).latest_measurements(cpu=cpu, backend="liboqs")
        assert {m.suite for m in stored} >= {"ML-DSA-44", "ML-DSA-87"}

    run(scenario())


@pytest.mark.fresh
@pytest.mark.timeout(240)
def test_first_run_measures_one_cpu_per_cluster_by_itself(tmp_path: Path) -> None:
    """Standalone, nothing stored: without a key press the monitor measures the first CPU
    of every cluster (check mode, one at a time), says so in the header, then shows the
    costs; `b` still measures afterwards. Works with liboqs or, without it, numba."""
    from qprof.service.store import Store
    from qprof.verify import backend_status

    backend = "liboqs" if backend_status("liboqs").available else "numba"
    db = tmp_path / "monitor.db"
    config = frozen_config(Path("/"), store=db, profile=str(TINY_PROFILE), live=True,
                           backend=backend, auto_measure=True, refresh_s=0.5)

    async def scenario() -> None:
        app = MonitorApp(config)
        headers: list[str] = []
        measured: list[int] = []
        async with app.run_test(size=(220, 36)) as pilot:
            for _ in range(2000):  # bounded: at most ~200 s
                await pilot.pause(0.1)
                if app.measuring_cpu is not None and app.measuring_cpu not in measured:
                    measured.append(app.measuring_cpu)
                # What the header shows from its next frame on (a quick measurement on a
                # warm cache can end before a frame is drawn, so read the collector).
                if app.collector.activity:
                    headers.append(app.collector.activity)
                if app._first_run is None and app._first_run_decided \
                        and app.measuring_cpu is None:
                    break
            firsts = app._cluster_firsts()
            assert measured == firsts, (measured, firsts)
            assert headers and headers[0].startswith("first run: measuring one CPU per "
                                                     "cluster (check, nice 10")
            assert app.frame is not None and app.frame.machine.activity is None
            await settle(pilot)
            rows = {r[0]: r for r in coverage_rows(app)}
            # Measured here: its time, and an estimate, or "—" where the host was too
            # contended for one (no reliable estimate: the quick first run of a busy CI).
            assert rows["ML-DSA-87"][2].endswith("µs"), rows
            assert (rows["ML-DSA-87"][4].split(" (")[0].isdigit()
                    or rows["ML-DSA-87"][4] == "—"), rows
            # `b` still measures (in the monitor's own mode) once the first run is done.
            await pilot.press("b")
            assert app.measuring_cpu is not None  # stopped when the app exits
        stored = Store(db, readonly=True)
        for cpu in firsts:
            assert {m.suite for m in stored.latest_measurements(cpu=cpu, backend=backend)} \
                >= {"ML-DSA-44", "ML-DSA-87"}

    run(scenario())


def test_no_auto_measure_and_stored_results_leave_the_first_run_alone(tmp_path: Path) -> None:
    db = seed_store(tmp_path / "q.db", cpu=0)

    async def scenario(config) -> None:  # noqa: ANN001
        app = MonitorApp(config)
        async with app.run_test(size=(220, 36)) as pilot:
            await settle(pilot)
            app.refresh_frame()
            assert app._first_run_decided and app._first_run is None
            assert app.measuring_cpu is None and app.frame.machine.activity is None

    # Results stored already: nothing to do at start.
    run(scenario(frozen_config(Path("/"), store=db, live=True, auto_measure=True)))
    # Nothing stored, but the user opted out.
    run(scenario(frozen_config(Path("/"), store=tmp_path / "empty.db", live=True,
                               auto_measure=False)))


def test_attaches_to_a_daemon_store_and_lists_alerts_newest_first(tmp_path: Path) -> None:
    from qprof.service.alerts import Alert
    from qprof.service.store import Store

    root = fixture_root(BIG_LITTLE)
    db = seed_store(tmp_path / "qprof.db", cpu=2)  # the daemon's file name in its state dir
    store = Store(db)
    store.alerts.add(Alert(ts=1_764_500_000.0, kind="cap_started", severity="warning",
                          message="max 1.08 of 2.42 GHz (policy)", cpu=6))
    store.alerts.add(Alert(ts=1_764_500_600.0, kind="coverage_lost", severity="critical",
                          message="SLH-DSA-SHAKE-128s 1576 > 1200", cluster=0))
    store.close()

    async def scenario() -> None:
        app = MonitorApp(frozen_config(root, state_dir=tmp_path))
        async with app.run_test(size=(220, 36)) as pilot:
            await settle(pilot)
            assert app.collector.sources.mode == "daemon"
            assert app.frame.machine.source.startswith(f"daemon store {db}")
            assert not app.collector.measurable  # another machine's topology: no `b`
            kinds = [a.kind for a in app.frame.alerts]
            assert kinds[:2] == ["coverage_lost", "cap_started"]
            assert app.frame.alerts[0].where == "cluster 0"
            slh = next(r for r in coverage_rows(app) if r[0] == "SLH-128s")
            assert slh[7] == "✗ NO"

    run(scenario())


# -- issue 49, finding 7: the export never follows a link planted in exports/ ---------------

def _bare_frame(taken_at: float):  # noqa: ANN202 - a Frame
    from qprof.tui.model import Frame, MachineView

    return Frame(taken_at=taken_at, machine=MachineView(
        model="m", designs="d", arch=None, profile="qanum", backend="liboqs", source="s",
        measurable=False), cores=(), coverage=())


def test_finding_7_export_never_follows_links_planted_in_exports(tmp_path: Path) -> None:
    import os
    import time

    from qprof.atomicfile import OutputError
    from qprof.tui.report import write_report

    exports = tmp_path / "state" / "exports"
    exports.mkdir(parents=True, mode=0o700)
    victim = tmp_path / "victim.conf"
    victim.write_text("keep me\n")
    created = tmp_path / "created-through-a-link"
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(FROZEN_AT))
    (exports / f"qprof-monitor-{stamp}.md").symlink_to(created)  # dangling
    (exports / f"qprof-monitor-{stamp}.html").symlink_to(victim)
    (exports / f"qprof-monitor-{stamp}-2.html").symlink_to(victim)
    md = write_report(_bare_frame(FROZEN_AT), exports, "qanum")
    assert victim.read_text() == "keep me\n" and not created.exists()
    assert md.name == f"qprof-monitor-{stamp}-3.md" and not md.is_symlink()
    assert md.with_suffix(".html").read_text().startswith("<!DOCTYPE html")
    assert (exports / f"qprof-monitor-{stamp}.html").is_symlink()  # left as it was
    assert not list(exports.glob("*.tmp"))
    # A directory another user owns (or anyone may write) is not written into at all.
    if os.geteuid() == 0:
        os.chown(exports, 65534, 65534)
        with pytest.raises(OutputError, match="owned by uid 65534"):
            write_report(_bare_frame(FROZEN_AT), exports, "qanum")
    os.chown(exports, os.geteuid(), os.getegid())
    exports.chmod(0o777)
    with pytest.raises(OutputError, match="anyone may write there"):
        write_report(_bare_frame(FROZEN_AT), exports, "qanum")
    # A new exports/ directory is made 0700.
    fresh = write_report(_bare_frame(FROZEN_AT), tmp_path / "new" / "exports", "qanum")
    assert fresh.parent.stat().st_mode & 0o777 == 0o700
