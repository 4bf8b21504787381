"""The garbage collector pause around building the report's tables."""

import gc

import pytest

from analysis.report.text import report_summary_lines
from analysis.tables import collector_paused


@pytest.fixture
def collector_on():
    was_enabled = gc.isenabled()
    gc.enable()
    yield
    if not was_enabled:
        gc.disable()


def test_paused_inside_and_resumed_after(collector_on):
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_resumed_after_an_error(collector_on):
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_left_off_when_it_was_off(collector_on):
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_nested_pauses_resume_once_outermost_ends(collector_on):
    with collector_paused():
        with collector_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_summary_resumes_the_collector(collector_on):
    report = {"study": "s", "n_judgements": 0, "parameters": {}, "groups": {}}
    lines = report_summary_lines(report)
    assert any(line.startswith("No judgements count yet") for line in lines)
    assert gc.isenabled()
