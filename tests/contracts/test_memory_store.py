"""The MemoryStore contract, run against every store.

The Django store (the source of truth, written through the services) and
the in-memory reference must agree on hydration, scoped listings, counts,
identifiers, stored links, usage and isolation (`recall.ports.MemoryStore`).
Each store gets a `Writer` that creates data the way that store is fed:
services for Django, Records for the reference.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import pytest

from recall.ports import MemoryStore
from recall.testing import InMemoryStore
from recall.types import MEMORY, Filter, Link, Record

T0 = datetime(2025, 6, 1, tzinfo=UTC)


class Writer(Protocol):
    store: MemoryStore

    def project(self, slug: str, isolation: str = "open") -> None: ...

    def memory(self, project: str | None, name: str, **fields: Any) -> str: ...

    def note(self, project: str | None, title: str) -> str: ...

    def archive(self, memory_id: str) -> None: ...

    def star(self, item_id: str) -> None: ...

    def use(self, memory_id: str) -> None: ...

    def associate(self, source: str, target: str, weight: float, rel: str = "related") -> None: ...

    def supersede(self, memory_id: str, name: str) -> str: ...


class ReferenceWriter:
    """Records straight into the in-memory store, each one newer than the last."""

    def __init__(self) -> None:
        self.store = InMemoryStore()
        self._isolation: dict[str, str] = {}
        self.store._isolation = self._isolation
        self._n = 0

    def _next(self) -> tuple[str, datetime]:
        self._n += 1
        return f"01J{self._n:023d}", T0 + timedelta(minutes=self._n)

    def project(self, slug: str, isolation: str = "open") -> None:
        self._isolation[slug] = isolation

    def memory(self, project: str | None, name: str, **fields: Any) -> str:
        ident, when = self._next()
        values: dict[str, Any] = {
            "kind": "fact", "description": name, "body": "", "tags": (), "source": "user_stated",
        }  # fmt: skip
        values.update(fields)
        values["tags"] = tuple(values["tags"])
        self.store.add(
            Record(ident, "memory", project, name=name, title=name, created=when, updated=when,
                   **values)
        )  # fmt: skip
        return ident

    def note(self, project: str | None, title: str) -> str:
        ident, when = self._next()
        slug = title.lower().replace(" ", "-")
        self.store.add(Record(ident, "note", project, "note", slug, title, "", updated=when))
        return ident

    def archive(self, memory_id: str) -> None:
        self.store.invalidate(memory_id)

    def star(self, item_id: str) -> None:
        self.store.records[item_id] = replace(self.store.records[item_id], favorite=True)

    def use(self, memory_id: str) -> None:
        self.store._usage[memory_id] = 0.4

    def associate(self, source: str, target: str, weight: float, rel: str = "related") -> None:
        self.store.connect(source, target, weight, rel)

    def supersede(self, memory_id: str, name: str) -> str:
        old = self.store.records[memory_id]
        new = self.memory(old.project, name)
        self.store.invalidate(memory_id, superseded_by=new)
        for (src, dst, rel), link in list(self.store.explicit.items()):  # carried over
            if src == memory_id:
                self.store.connect(new, dst, link.weight, rel)
            if dst == memory_id:
                self.store.connect(src, new, link.weight, rel)
        return new


class DjangoWriter:
    """Through the services, as every real write goes."""

    def __init__(self) -> None:
        from console.store import DjangoStore

        self.store = DjangoStore()

    def project(self, slug: str, isolation: str = "open") -> None:
        from console import services

        services.project_create(slug=slug, isolation=isolation)

    def _project(self, slug: str | None) -> Any:
        from console.models import Project

        return None if slug is None else Project.objects.get(slug=slug)

    def memory(self, project: str | None, name: str, **fields: Any) -> str:
        from console import services

        fields.setdefault("description", name)
        fields["tags"] = list(fields.get("tags", ()))
        return str(services.memory_create(project=self._project(project), name=name, **fields).pk)

    def note(self, project: str | None, title: str) -> str:
        from console import services

        return str(services.note_create(project=self._project(project), title=title).pk)

    def archive(self, memory_id: str) -> None:
        from console import services
        from console.models import Memory

        services.memory_archive(memory=Memory.objects.get(pk=memory_id))

    def star(self, item_id: str) -> None:
        from console import services
        from console.models import Memory, Note

        item = Memory.objects.filter(pk=item_id).first() or Note.objects.get(pk=item_id)
        services.favorite_toggle(item=item, value=True)

    def use(self, memory_id: str) -> None:
        from django.utils import timezone

        from console import services

        yesterday = timezone.now() - timedelta(days=1)  # before the usage snapshot's cut
        services.retrieval_record(kind="read", ids=[memory_id], project=None, at=yesterday)

    def associate(self, source: str, target: str, weight: float, rel: str = "related") -> None:
        from console import services
        from console.models import Memory

        src, dst = Memory.objects.get(pk=source), Memory.objects.get(pk=target)
        services.association_write(src=src, dst=dst, rel=rel, weight=weight)

    def supersede(self, memory_id: str, name: str) -> str:
        from console import services
        from console.models import Memory

        old = Memory.objects.get(pk=memory_id)
        return str(services.memory_supersede(memory=old, name=name, description=name).pk)


# The Django case is marked statically: pytest-django creates the test database
# only for a session whose collected tests say they need it, so this file run on
# its own found no tables when the mark came from a fixture at run time.
@pytest.fixture(params=[pytest.param("django", marks=pytest.mark.django_db), "memory"])
def writer(request: pytest.FixtureRequest) -> Iterator[Writer]:
    if request.param == "memory":
        yield ReferenceWriter()
        return
    request.getfixturevalue("db")
    yield DjangoWriter()


@pytest.fixture
def world(writer: Writer) -> Callable[[], dict[str, str]]:
    """Two projects (one sealed), global memories, a note, links, an archived memory."""

    def build() -> dict[str, str]:
        writer.project("alpha")
        writer.project("vault", isolation="sealed")
        ids = {
            "style": writer.memory(None, "style", description="global style"),
            "deploy": writer.memory("alpha", "deploy-order", kind="runbook", tags=["ops"]),
            "gotcha": writer.memory("alpha", "boot-race", kind="gotcha"),
            "secret": writer.memory("vault", "vault-key"),
            "old": writer.memory("alpha", "retired-rule"),
            "note": writer.note("alpha", "Pager rota"),
        }
        writer.archive(ids["old"])
        return ids

    return build


ALPHA = Filter(projects=("alpha",), include_global=True)


def test_hydrate_maps_every_field_and_drops_missing_ids(writer: Writer) -> None:
    writer.project("alpha")
    ident = writer.memory(
        "alpha", "deploy-order", kind="runbook", description="deploy in order",
        body="step one", tags=["ops", "deploy"], importance=0.7, session_id="s1",
        occurred_at=T0 - timedelta(days=3), valid_from=T0 - timedelta(days=2),
    )  # fmt: skip

    found = writer.store.hydrate([ident, "01J99999999999999999999999"])

    assert set(found) == {ident}
    r = found[ident]
    assert (r.item, r.project, r.kind, r.name, r.title) == (
        "memory", "alpha", "runbook", "deploy-order", "deploy-order",
    )  # fmt: skip
    assert (r.description, r.body, r.tags, r.importance) == (
        "deploy in order", "step one", ("ops", "deploy"), 0.7,
    )  # fmt: skip
    assert (r.active, r.favorite, r.session_id, r.superseded_by) == (True, False, "s1", None)
    assert (r.occurred_at, r.valid_from) == (T0 - timedelta(days=3), T0 - timedelta(days=2))
    assert r.updated is not None


def test_hydrate_reads_notes_too(writer: Writer) -> None:
    writer.project("alpha")
    note = writer.note("alpha", "Pager rota")

    (r,) = writer.store.hydrate([note]).values()

    assert (r.item, r.project, r.title, r.name, r.active) == (
        "note", "alpha", "Pager rota", "pager-rota", True,
    )  # fmt: skip


def test_browse_is_scoped_live_and_newest_first(world: Any, writer: Writer) -> None:
    ids = world()

    rows = writer.store.browse(where=ALPHA, limit=10)

    assert [r.id for r in rows] == [ids["note"], ids["gotcha"], ids["deploy"], ids["style"]]
    assert writer.store.count(where=ALPHA) == 4


def test_browse_filters_items_kinds_validity_and_limit(world: Any, writer: Writer) -> None:
    ids = world()
    store = writer.store

    memories = replace(ALPHA, items=("memory",))
    assert [r.id for r in store.browse(where=memories, limit=10)] == [
        ids["gotcha"], ids["deploy"], ids["style"],
    ]  # fmt: skip
    gotchas = replace(memories, kinds=("gotcha",))
    assert [r.id for r in store.browse(where=gotchas, limit=10)] == [ids["gotcha"]]
    everything = replace(memories, active_only=False)
    assert ids["old"] in [r.id for r in store.browse(where=everything, limit=10)]
    assert store.count(where=everything) == 4
    assert len(store.browse(where=ALPHA, limit=2)) == 2


def test_names_are_the_first_memories_browse_returns(world: Any, writer: Writer) -> None:
    world()
    writer.memory("alpha", "long-story", description="in short", body="the whole story")
    memories = replace(ALPHA, items=(MEMORY,))
    full = writer.store.browse(where=memories, limit=3)

    assert len(full) == 3
    assert writer.store.names(where=memories, limit=3) == [
        (r.id, r.name, r.description, r.updated) for r in full
    ]
    assert writer.store.names(where=replace(ALPHA, items=("note",)), limit=3) == []


def test_names_since_are_those_updated_at_or_after_it(world: Any, writer: Writer) -> None:
    """A PromptRecall corpus's refresh reads only what changed since its newest row."""
    world()
    memories = replace(ALPHA, items=(MEMORY,))
    full = writer.store.names(where=memories, limit=10)
    assert len(full) >= 3 and full[1].updated is not None

    since = writer.store.names(where=memories, limit=10, since=full[1].updated)
    later = full[1].updated + timedelta(days=1)

    assert since == full[:2]
    assert writer.store.names(where=memories, limit=1, since=full[1].updated) == full[:1]
    assert writer.store.names(where=memories, limit=10, since=later) == []


def test_favorites_only(world: Any, writer: Writer) -> None:
    ids = world()
    writer.star(ids["deploy"])

    starred = writer.store.browse(where=ALPHA, limit=10, favorites_only=True)

    assert [r.id for r in starred] == [ids["deploy"]] and starred[0].favorite


def test_a_project_without_global_sees_its_own_only(world: Any, writer: Writer) -> None:
    ids = world()

    vault = Filter(projects=("vault",), include_global=False)

    assert [r.id for r in writer.store.browse(where=vault, limit=10)] == [ids["secret"]]
    assert writer.store.count(where=vault) == 1


def test_identifier_lanes_exact_id_then_name_then_prefix(world: Any, writer: Writer) -> None:
    ids = world()
    store = writer.store

    assert [r.id for r in store.identifiers(ids["deploy"], where=ALPHA, limit=5)] == [ids["deploy"]]
    assert [r.id for r in store.identifiers("deploy-order", where=ALPHA, limit=5)] == [
        ids["deploy"]
    ]
    assert [r.id for r in store.identifiers("pager-rota", where=ALPHA, limit=5)] == [ids["note"]]
    prefix = store.identifiers(ids["deploy"][:20].lower(), where=ALPHA, limit=5)
    assert ids["deploy"] in [r.id for r in prefix]
    assert store.identifiers("deploy order", where=ALPHA, limit=5) == []
    assert store.identifiers("vault-key", where=ALPHA, limit=5) == []  # out of scope


def test_links_in_body_order_project_before_global_never_self(writer: Writer) -> None:
    writer.project("alpha")
    glob = writer.memory(None, "style")
    local = writer.memory("alpha", "style")
    order = writer.memory("alpha", "deploy-order")
    source = writer.memory(
        "alpha", "source", body="[[deploy-order]] then [[style]], [[source]], [[missing]]"
    )
    plain = writer.memory("alpha", "plain")
    global_source = writer.memory(None, "global-source", body="[[style]]")

    found = writer.store.links([source, plain, global_source, "01J99999999999999999999999"])

    assert found == {
        source: (Link(order), Link(local)),
        global_source: (Link(glob),),
    }


def test_usage_is_in_unit_range_for_used_ids_only(writer: Writer) -> None:
    writer.project("alpha")
    used, unused = writer.memory("alpha", "used"), writer.memory("alpha", "unused")
    writer.use(used)

    usage = writer.store.usage([used, unused])

    assert set(usage) == {used} and 0 < usage[used] < 1


def test_isolation_of_known_and_unknown_projects(world: Any, writer: Writer) -> None:
    world()
    assert writer.store.isolation("vault") == "sealed"
    assert writer.store.isolation("alpha") == "open"
    assert writer.store.isolation("nope") == "open"


def test_edges_typed_weighted_scoped_both_ways(writer: Writer) -> None:
    writer.project("alpha")
    writer.project("beta")
    a = writer.memory("alpha", "a", body="[[b]]")
    b = writer.memory("alpha", "b")
    c = writer.memory("alpha", "c")
    g = writer.memory(None, "g")
    off = writer.memory("alpha", "off")
    writer.associate(a, c, 0.4, "caused")
    writer.associate(a, g, 0.9)
    writer.associate(c, a, 0.7, "depends-on")
    writer.associate(a, off, 1.0)
    writer.archive(off)
    store = writer.store

    forward = store.edges([a], where=ALPHA)
    light = store.edges([a], where=ALPHA, min_weight=0.5)
    sealed = store.edges([a], where=Filter(projects=("alpha",), include_global=False))
    both = store.edges([a], where=ALPHA, reverse=True)

    assert sorted(forward[a], key=lambda e: e.target) == sorted(
        [Link(b), Link(c, 0.4, "caused"), Link(g, 0.9, "related")], key=lambda e: e.target
    )
    assert {e.target for e in light[a]} == {b, g}
    assert {e.target for e in sealed[a]} == {b, c}
    assert [e for e in both[a] if e.reverse] == [Link(c, 0.7, "depends-on", reverse=True)]
    assert store.edges([b, "01J99999999999999999999999"], where=ALPHA) == {}


def test_supersession_is_an_edge_and_associations_follow_the_replacement(writer: Writer) -> None:
    writer.project("alpha")
    old = writer.memory("alpha", "old")
    other = writer.memory("alpha", "other")
    writer.associate(old, other, 0.6, "caused")
    writer.associate(other, old, 0.5)
    new = writer.supersede(old, "new")
    store = writer.store
    everything = Filter(projects=("alpha",), include_global=True, active_only=False)

    assert Link(old, 1.0, "supersedes") in store.edges([new], where=everything)[new]
    assert Link(other, 0.6, "caused") in store.edges([new], where=ALPHA)[new]
    assert Link(new, 0.5, "related") in store.edges([other], where=ALPHA)[other]
    assert all(e.target != old for e in store.edges([new, other], where=ALPHA)[other])
    back = store.edges([old], where=ALPHA, reverse=True)[old]
    assert Link(new, 1.0, "supersedes", reverse=True) in back


# --- session neighbourhood (Dakera 004; recall.neighbourhood) ---


def test_earlier_turns_are_before_in_order_in_scope_and_live(writer: Writer) -> None:
    writer.project("alpha")
    writer.project("beta")

    def turn(project: str, order: int, session: str = "alpha:S1", **kw: Any) -> str:
        return writer.memory(project, f"t-{project}-{session[-1]}-{order}", kind="episode",
                             session_id=session, session_order=order, **kw)  # fmt: skip

    one, two, three, four = (turn("alpha", n) for n in (1, 2, 3, 4))
    after = turn("alpha", 5)
    other_session = turn("alpha", 3, session="alpha:S2")
    foreign = turn("beta", 1, session="alpha:S3")
    seed_after_foreign = turn("alpha", 2, session="alpha:S3")
    writer.archive(two)
    store = writer.store
    alpha = Filter(projects=("alpha",), include_global=False)

    found = store.earlier_turns([four, three, other_session, seed_after_foreign, "nope"],
                                where=alpha, turns=2)  # fmt: skip

    assert found == {four: (three,), three: (one,)}  # two is archived, after is later
    assert store.earlier_turns([four], where=Filter(active_only=False), turns=2) == {
        four: (three, two)
    }
    assert store.earlier_turns([after], where=alpha, turns=0) == {}
    assert foreign not in str(found)


def test_earlier_turns_are_turns_not_other_kinds_written_in_the_session(writer: Writer) -> None:
    # An agent's gotcha or runbook written with its session id is not a turn of the
    # conversation: it neither is read with the turns before it nor lends its text.
    writer.project("alpha")
    session = {"session_id": "alpha:S1"}
    one = writer.memory("alpha", "turn-1", kind="episode", session_order=1, **session)
    gotcha = writer.memory("alpha", "a-gotcha", kind="gotcha", session_order=2, **session)
    three = writer.memory("alpha", "turn-3", kind="episode", session_order=3, **session)
    runbook = writer.memory("alpha", "a-runbook", kind="runbook", session_order=4, **session)
    alpha = Filter(projects=("alpha",), include_global=False)

    found = writer.store.earlier_turns([gotcha, three, runbook], where=alpha, turns=2)

    assert found == {three: (one,)}


def test_session_neighbours_are_near_in_scope_live_and_capped(writer: Writer) -> None:
    writer.project("alpha")
    writer.project("beta")

    def turn(project: str | None, order: int, minutes: int = 0, **kw: Any) -> str:
        fields: dict[str, Any] = {"kind": "episode", "session_id": "alpha:S1"}
        fields.update(session_order=order, occurred_at=T0 + timedelta(minutes=minutes), **kw)
        return writer.memory(project, f"turn-{project}-{order}-{minutes}", **fields)

    seed = turn("alpha", 5)
    before, after, two = turn("alpha", 4), turn("alpha", 6), turn("alpha", 7)
    far = turn("alpha", 8)  # three turns away
    late = turn("alpha", 3, minutes=30)  # two turns, but half an hour later
    gone = turn("alpha", 6, minutes=1)
    writer.archive(gone)
    other = turn("beta", 4)  # the same session id, another project: out of scope
    elsewhere = writer.memory(
        "alpha", "elsewhere", kind="episode", session_id="alpha:S2", session_order=5,
        occurred_at=T0,
    )  # fmt: skip
    fact = writer.memory("alpha", "a-fact", kind="fact", session_id="alpha:S1", session_order=9)
    store = writer.store
    alpha_only = Filter(projects=("alpha",), include_global=False)

    found = store.session_neighbours([seed], where=alpha_only, minutes=5, turns=2, cap=10)
    capped = store.session_neighbours([seed], where=alpha_only, minutes=5, turns=2, cap=2)
    wide = store.session_neighbours([seed], where=Filter(), minutes=5, turns=2, cap=10)
    facts = store.session_neighbours(
        [fact], where=alpha_only, minutes=5, turns=2, cap=10, kinds=("episode", "working")
    )

    assert [(n.id, n.turns) for n in found[seed]] == sorted(
        [(before, 1), (after, 1), (two, 2)], key=lambda t: (t[1], t[0])
    )
    assert {n.minutes for n in found[seed]} == {0.0}
    assert not {far, late, gone, other, elsewhere, fact} & {n.id for n in found[seed]}
    assert [n.turns for n in capped[seed]] == [1, 1]
    assert other in {n.id for n in wide[seed]}  # in scope once the filter admits beta
    assert facts == {}  # a fact is not a seed under an episodic kinds filter
    assert store.session_neighbours([elsewhere], where=alpha_only, minutes=5, turns=2, cap=10) == {}


# --- end session neighbourhood ---


def test_an_expired_memory_is_gone_from_every_read_at_once(writer: Writer) -> None:
    writer.project("alpha")
    now = datetime.now(UTC)
    gone = writer.memory("alpha", "brief-window", session_id="s9", session_order=0,
                         expires_at=now - timedelta(seconds=1))  # fmt: skip
    kept = writer.memory("alpha", "long-window", session_id="s9", session_order=1,
                         expires_at=now + timedelta(days=1))  # fmt: skip

    store = writer.store
    assert set(store.hydrate([gone, kept])) == {kept}
    assert [r.id for r in store.browse(where=ALPHA, limit=10)] == [kept]
    assert store.count(where=ALPHA) == 1
    assert store.identifiers("brief-window", where=ALPHA, limit=5) == []
    near = store.session_neighbours([kept], where=ALPHA, minutes=5, turns=2, cap=5)
    assert gone not in {n.id for ns in near.values() for n in ns}
    (record,) = store.hydrate([kept]).values()
    assert record.expires_at == now + timedelta(days=1)
    assert (record.helpful, record.harmful, record.access_count) == (0, 0, 0)
    # ... except to the cold tier's include_history, until a purge takes it
    assert set(store.hydrate([gone, kept], expired=True)) == {gone, kept}
