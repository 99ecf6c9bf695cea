"""The MemoryStore `as_of` contract (valid time, transaction time), run against every store.

Each store is fed the way it is fed in life: the Django store through the
services (a revision row per change, recorded at commit time), the in-memory
reference by `revise` / `remove` at the same real instants. A test marks an
instant between two changes with `mark()`, which waits a moment on each side
so that no change can share the marked microsecond (an ordering guard, not a
timing assertion).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Protocol

import pytest

from recall.ports import MemoryStore
from recall.testing import InMemoryStore
from recall.types import Filter, Record

JAN, MAR, JUN = (datetime(2024, m, 1, tzinfo=UTC) for m in (1, 3, 6))
ALPHA = Filter(projects=("alpha",), include_global=False)


def mark() -> datetime:
    time.sleep(0.002)
    instant = datetime.now(UTC)
    time.sleep(0.002)
    return instant


class Writer(Protocol):
    store: MemoryStore

    def memory(self, project: str, name: str, body: str = "", **fields: Any) -> str: ...

    def edit(self, memory_id: str, **fields: Any) -> None: ...

    def supersede(self, memory_id: str, name: str, valid_from: datetime) -> str: ...

    def delete(self, memory_id: str) -> None: ...


class ReferenceWriter:
    def __init__(self) -> None:
        self.store = InMemoryStore()
        self._n = 0

    def memory(self, project: str, name: str, body: str = "", **fields: Any) -> str:
        self._n += 1
        ident, now = f"01J{self._n:023d}", datetime.now(UTC)
        values = {"valid_from": now, "kind": "fact", **fields}
        record = Record(ident, "memory", project, name=name, title=name, description=name,
                        body=body, created=now, updated=now, **values)  # fmt: skip
        self.store.revise(record, now)
        return ident

    def edit(self, memory_id: str, **fields: Any) -> None:
        now = datetime.now(UTC)
        self.store.revise(replace(self.store.records[memory_id], updated=now, **fields), now)

    def supersede(self, memory_id: str, name: str, valid_from: datetime) -> str:
        old = self.store.records[memory_id]
        new = self.memory(old.project or "", name, valid_from=valid_from)
        self.edit(memory_id, invalid_at=valid_from, active=False, superseded_by=new)
        return new

    def delete(self, memory_id: str) -> None:
        self.store.remove(memory_id, datetime.now(UTC))


class DjangoWriter:
    def __init__(self) -> None:
        from console import services
        from console.store import DjangoStore

        self.store = DjangoStore()
        for slug in ("alpha", "beta"):
            services.project_create(slug=slug)

    def memory(self, project: str, name: str, body: str = "", **fields: Any) -> str:
        from console import services
        from console.models import Project

        where = Project.objects.get(slug=project)
        return str(services.memory_create(project=where, name=name, body=body, **fields).pk)

    def edit(self, memory_id: str, **fields: Any) -> None:
        from console import services
        from console.models import Memory

        services.memory_update(memory=Memory.objects.get(pk=memory_id), **fields)

    def supersede(self, memory_id: str, name: str, valid_from: datetime) -> str:
        from console import services
        from console.models import Memory

        old = Memory.objects.get(pk=memory_id)
        return str(services.memory_supersede(memory=old, name=name, valid_from=valid_from).pk)

    def delete(self, memory_id: str) -> None:
        from console import services
        from console.models import Memory

        services.memory_delete(memory=Memory.objects.get(pk=memory_id))


@pytest.fixture(params=[pytest.param("django", marks=pytest.mark.django_db), "memory"])
def writer(request: pytest.FixtureRequest) -> Iterator[Writer]:
    if request.param == "django":
        request.getfixturevalue("db")
        yield DjangoWriter()
    else:
        yield ReferenceWriter()


def ids(records: list[Record]) -> list[str]:
    return [r.id for r in records]


def test_along_a_supersede_chain_exactly_one_memory_is_valid_at_each_instant(
    writer: Writer,
) -> None:
    a = writer.memory("alpha", "queue", "Use RabbitMQ", valid_from=JAN)
    b = writer.supersede(a, "queue", valid_from=MAR)
    c = writer.supersede(b, "queue", valid_from=JUN)

    def valid(at: datetime) -> list[str]:
        return ids(writer.store.as_of(where=ALPHA, valid_at=at))

    assert valid(datetime(2023, 12, 31, tzinfo=UTC)) == []
    assert valid(JAN) == [a] and valid(datetime(2024, 2, 1, tzinfo=UTC)) == [a]
    assert valid(MAR) == [b] and valid(datetime(2024, 5, 31, tzinfo=UTC)) == [b]
    assert valid(JUN) == [c] and valid(datetime(2030, 1, 1, tzinfo=UTC)) == [c]
    assert ids(writer.store.as_of(where=ALPHA)) == [c]  # no instant: the normal rule
    past = writer.store.as_of(where=replace(ALPHA, active_only=False), valid_at=MAR)
    assert {r.id: r.active for r in past} == {a: False, b: True, c: False}
    assert {r.id: r.invalid_at for r in past} == {a: MAR, b: JUN, c: None}


def test_recorded_as_of_reads_the_text_known_then(writer: Writer) -> None:
    m = writer.memory("alpha", "deploy", "Deploy on Fridays")
    before = mark()
    writer.edit(m, body="Never deploy on Fridays")
    after = mark()

    then = writer.store.as_of(where=ALPHA, recorded_at=before)
    now = writer.store.as_of(where=ALPHA, recorded_at=after)

    assert [(r.id, r.body) for r in then] == [(m, "Deploy on Fridays")]
    assert [(r.id, r.body) for r in now] == [(m, "Never deploy on Fridays")]
    assert [r.body for r in writer.store.as_of(where=ALPHA)] == ["Never deploy on Fridays"]


def test_a_deleted_memory_is_known_before_its_delete_and_never_after(writer: Writer) -> None:
    early = mark()
    m = writer.memory("alpha", "temp", "Short-lived")
    kept = writer.memory("alpha", "kept", "Stays")
    known = mark()
    writer.delete(m)
    later = [mark(), mark()]

    assert ids(writer.store.as_of(where=ALPHA, recorded_at=early)) == []
    assert ids(writer.store.as_of(where=ALPHA, recorded_at=known)) == [m, kept]
    for instant in later:
        assert ids(writer.store.as_of(where=ALPHA, recorded_at=instant)) == [kept]
    assert ids(writer.store.as_of(where=ALPHA)) == [kept]


def test_both_axes_combine_and_the_scope_holds_on_each(writer: Writer) -> None:
    a = writer.memory("alpha", "plan", "Plan A", valid_from=JAN)
    other = writer.memory("beta", "plan", "Plan A elsewhere", valid_from=JAN)
    known_a = mark()
    b = writer.supersede(a, "plan", valid_from=MAR)
    mark()

    # What we knew at known_a about April: A (its close at March was not recorded yet).
    april = datetime(2024, 4, 1, tzinfo=UTC)
    assert ids(writer.store.as_of(where=ALPHA, valid_at=april, recorded_at=known_a)) == [a]
    assert ids(writer.store.as_of(where=ALPHA, valid_at=april)) == [b]
    for recorded in (known_a, None):
        seen = writer.store.as_of(where=ALPHA, valid_at=april, recorded_at=recorded)
        assert other not in ids(seen)


def test_recalls_filters_read_the_state_known_then(writer: Writer) -> None:
    m = writer.memory("alpha", "tagged", "Tagged", tags=("red",), kind="gotcha")
    before = mark()
    writer.edit(m, tags=("blue",))
    after = mark()
    red = replace(ALPHA, tags=("red",), kinds=("gotcha",))

    assert ids(writer.store.as_of(where=red, recorded_at=before)) == [m]
    assert ids(writer.store.as_of(where=red, recorded_at=after)) == []
    assert ids(writer.store.as_of(where=replace(red, tags=("blue",)), recorded_at=after)) == [m]
    assert ids(writer.store.as_of(where=replace(red, kinds=("fact",)), recorded_at=before)) == []
