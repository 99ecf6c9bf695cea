"""The altitude bench at smoke size: every budget and altitude gets its figures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from console.bench import altitude


def test_altitude_bench_prints_every_budget_for_entity_and_auto(planes: Path, db: Any):
    body = altitude.measure(size=40, queries=3, root=planes, budgets=(100, 4000))

    assert [(r["budget"], r["altitude"]) for r in body["rows"]] == [
        (100, "entity"), (100, "auto"), (4000, "entity"), (4000, "auto"),
    ]  # fmt: skip
    assert body["digest"]["built"] == 1 and body["digest"]["sentences"] > 0
    tight = {r["altitude"]: r for r in body["rows"] if r["budget"] == 100}
    assert tight["entity"]["digest"] == 0 and tight["auto"]["digest"] == 1  # auto climbed
    assert all(r["tokens"] <= r["budget"] for r in body["rows"])
    text = altitude.table(body)
    assert "budget" in text and "auto" in text and "covered" in text
