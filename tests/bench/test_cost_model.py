"""The start-up model of bench/cost_model.py: what docs/deploy.md recommends follows from it."""

from __future__ import annotations

from bench.cost_model import (
    COLD_START_S,
    PRE_INITIALIZED_START_S,
    WARM_START_S,
    StartupSetting,
    render_startup,
    startup,
)

DEFAULT = StartupSetting("default", 15)


def test_hourly_files_start_cold_by_default_and_warm_for_free_with_a_longer_idle_stop():
    assert startup(3600, DEFAULT).start_s == COLD_START_S
    longer = startup(3600, StartupSetting("75", 75))
    assert longer.start_s == WARM_START_S and longer.idle_usd() == 0


def test_pre_initialized_workers_are_billed_idle_up_to_the_idle_stop():
    hourly = startup(3600, StartupSetting("pre", 15, 2))
    assert hourly.start_s == COLD_START_S  # stopped after 15 idle minutes anyway
    assert hourly.idle_worker_hours == 2 * 0.25 * 24
    kept = startup(3600, StartupSetting("pre, a day", 1440, 2))
    assert kept.start_s == PRE_INITIALIZED_START_S and kept.idle_usd() > 10


def test_a_file_a_minute_keeps_the_application_started():
    assert startup(60, DEFAULT).cold_runs == 0
    assert "| 1 file/h | default: auto-stop 15 min | 24 | 120 s |" in render_startup()
