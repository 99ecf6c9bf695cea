from __future__ import annotations

from datetime import timedelta

import pytest

from recall.usage import utility
from tests.recall.conftest import NOW


def test_no_events_is_zero():
    assert utility([], NOW) == 0.0


def test_fresh_events_weigh_by_kind_and_saturate():
    raw = 3.0 + 1.5 + 1.0
    u = utility([("read", NOW), ("recalled", NOW), ("prompt", NOW), ("searched", NOW)], NOW)

    assert u == pytest.approx(raw / (raw + 4))


def test_events_halve_every_fourteen_days():
    u = utility([("read", NOW - timedelta(days=14)), ("read", NOW - timedelta(days=28))], NOW)

    raw = 3.0 * 0.5 + 3.0 * 0.25
    assert u == pytest.approx(raw / (raw + 4))


def test_utility_stays_below_one_and_future_events_count_as_now():
    assert utility([("read", NOW)] * 10_000, NOW) < 1
    assert utility([("read", NOW + timedelta(days=3))], NOW) == pytest.approx(3 / 7)
