"""Holm's adjustment leaves the garbage collector as it found it."""

import gc

import pytest

from analysis.metrics.protocol.systems import holm


def test_holm_unfreezes_the_collector():
    before = gc.get_freeze_count()
    assert holm([0.01, None, 0.04, 0.03]) == pytest.approx([0.03, None, 0.06, 0.06])
    assert gc.get_freeze_count() == before
