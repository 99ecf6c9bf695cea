"""Compile-once queries give exactly what the ORM gives, for any bound value."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.db import connection, transaction
from django.db.backends.sqlite3.base import SQLiteCursorWrapper
from django.db.models import F, QuerySet
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from console import prepared as prepared_module
from console import services
from console.models import Memory, Project
from console.prepared import Prepared

pytestmark = pytest.mark.django_db

COLUMNS = ("id", "project__slug", "name", "tags", "favorite", "invalid_at", "created")


@pytest.fixture
def memories(planes: object) -> list[Memory]:
    ops = services.project_create(slug="ops")
    made = [
        services.memory_create(
            project=ops if n % 2 else None,
            kind="fact",
            name=f"fact-{n}",
            description=f"fact {n}",
            tags=[f"t{n}", "shared"],
        )
        for n in range(4)
    ]
    services.memory_archive(memory=made[0])
    return made


def by_ids(n: int, *ids: str) -> QuerySet[Memory]:
    return Memory.objects.filter(pk__in=ids).order_by("pk")


def by_name(key: str, name: str) -> QuerySet[Memory]:
    return Memory.objects.filter(name=name)


def test_rows_equal_the_orm_with_converted_columns(memories: list[Memory]) -> None:
    prepared = Prepared(by_ids, model=Memory, columns=COLUMNS)
    ids = [m.pk for m in memories[:3]]

    rows = prepared.rows(len(ids), *ids)

    assert rows == list(by_ids(0, *ids).values_list(*COLUMNS))
    assert rows[0][COLUMNS.index("invalid_at")] is not None  # an aware datetime
    assert rows[0][COLUMNS.index("created")].tzinfo is not None
    assert rows[1][COLUMNS.index("tags")] == ["t1", "shared"]  # JSON decoded
    assert rows[1][COLUMNS.index("project__slug")] == "ops"  # the join


def test_one_shape_serves_every_value(memories: list[Memory]) -> None:
    prepared = Prepared(by_name, model=Memory, columns=("pk",))

    found = [prepared.rows("by-name", m.name) for m in memories]

    assert found == [[(m.pk,)] for m in memories]
    assert prepared.rows("by-name", "absent") == []
    assert len(prepared._shapes) == 1


def test_a_value_sql_would_transform_is_refused(memories: list[Memory]) -> None:
    prepared = Prepared(
        lambda key, q: Memory.objects.filter(name__icontains=q), model=Memory, columns=("pk",)
    )

    with pytest.raises(ValueError, match="verbatim"):
        prepared.rows("contains", "fact")


def test_an_empty_queryset_has_no_rows(memories: list[Memory]) -> None:
    prepared = Prepared(lambda key, name: Memory.objects.none(), model=Memory, columns=("pk",))

    assert prepared.rows("none", "fact-1") == []


def test_the_cache_is_bounded(memories: list[Memory]) -> None:
    prepared = Prepared(by_ids, model=Memory, columns=("pk",), size=2)

    for n in range(1, 5):
        assert len(prepared.rows(n, *[m.pk for m in memories[:n]])) == n

    assert len(prepared._shapes) == 2


def test_project_scope_is_part_of_the_shape(memories: list[Memory]) -> None:
    def build(slug: str | None, name: str) -> QuerySet[Memory]:
        rows = Memory.objects.filter(name=name)
        if slug is not None:
            rows = rows.filter(project__slug=slug)
        return rows

    prepared = Prepared(build, model=Memory, columns=("pk",))

    assert prepared.rows("ops", "fact-1") == [(memories[1].pk,)]
    assert prepared.rows("web", "fact-1") == []
    assert prepared.rows(None, "fact-2") == [(memories[2].pk,)]
    assert Project.objects.count() == 1


def test_json_objects_and_datetimes_convert_as_the_orm_converts(memories: list[Memory]) -> None:
    columns = ("pk", "created", "metadata", "importance")
    prepared = Prepared(by_name, model=Memory, columns=columns)

    rows = prepared.rows("by-name", "fact-2")

    assert rows == list(by_name("", "fact-2").values_list(*columns))
    assert isinstance(rows[0][2], dict) and rows[0][1].tzinfo is not None


def test_integer_and_datetime_arguments_bind_as_the_orm_binds(memories: list[Memory]) -> None:
    """Ranges and comparisons over numbers and moments: one shape, the ORM's rows for
    each value (on SQLite a datetime travels as text, with or without microseconds)."""

    def build(key: str, low: int, high: int, since: datetime) -> QuerySet[Memory]:
        rows = Memory.objects.filter(session_order__range=(low, high), created__gte=since)
        return rows.order_by("pk")

    for n, m in enumerate(memories):
        Memory.objects.filter(pk=m.pk).update(session_order=n)
    created = sorted(Memory.objects.values_list("created", flat=True))
    prepared = Prepared(build, model=Memory, columns=("pk",))
    cases = [
        (0, 3, created[0]),
        (1, 2, created[0]),
        (2, 9, created[2]),
        (-5, 0, created[0] - timedelta(microseconds=1)),
        (0, 3, created[-1].replace(microsecond=0) + timedelta(seconds=1)),
    ]

    for low, high, since in cases:
        assert prepared.rows("range", low, high, since) == list(
            build("", low, high, since).values_list("pk")
        ), (low, high, since)
    assert [len(prepared.rows("range", *c)) for c in cases] == [4, 2, 2, 1, 0]
    assert len(prepared._shapes) == 1


def test_a_32_bit_integer_key_reads_its_row(memories: list[Memory]) -> None:
    """An exact lookup on a 32-bit integer column (auth's users, `integer` on
    PostgreSQL): a placeholder out of its range made Django answer "no rows"
    without any SQL, so the shape never read a row."""
    from django.contrib.auth.models import User

    def by_pk(key: str, pk: int) -> QuerySet[User]:
        return User.objects.filter(pk=pk)

    prepared = Prepared(by_pk, model=User, columns=("username",))
    ada = User.objects.create_user("ada")

    assert prepared.rows("pk", ada.pk) == [("ada",)]
    assert prepared.rows("pk", ada.pk + 1000) == []


def test_an_argument_of_another_type_is_refused(memories: list[Memory]) -> None:
    prepared = Prepared(by_name, model=Memory, columns=("pk",))

    with pytest.raises(TypeError, match="str, int or datetime"):
        prepared.rows("by-name", 1.5)


def test_a_queryset_read_once_gives_what_values_list_gives(memories: list[Memory]) -> None:
    """`read_rows`: any queryset's rows with the prepared conversions (time travel and
    rebuilds read thousands of rows this way), the same tuples as the ORM's."""
    from console.prepared import read_rows
    from console.store import MEMORY_COLUMNS

    everything = Memory.objects.order_by("pk")
    assert read_rows(everything, MEMORY_COLUMNS) == list(everything.values_list(*MEMORY_COLUMNS))
    archived = everything.filter(invalid_at__isnull=False, project__isnull=True)
    assert read_rows(archived, COLUMNS) == list(archived.values_list(*COLUMNS))
    assert len(read_rows(archived, COLUMNS)) == 1
    assert read_rows(Memory.objects.filter(pk__in=[]), COLUMNS) == []  # no SQL at all


def test_empty_tags_read_as_a_new_empty_list_each_time(memories: list[Memory]) -> None:
    bare = services.memory_create(project=None, kind="fact", name="bare", description="b")
    prepared = Prepared(by_ids, model=Memory, columns=COLUMNS)
    at = COLUMNS.index("tags")

    first, again = (prepared.rows(1, bare.pk)[0][at] for _ in range(2))

    assert first == again == [] == Memory.objects.get(pk=bare.pk).tags
    assert first is not again  # a caller may fill it


def by_percent(key: str, name: str) -> QuerySet[Memory]:
    return Memory.objects.filter(name=name, description__contains=F("name"))  # LIKE '%%' || ...


def test_the_driver_cursor_reads_what_djangos_cursor_reads(memories: list[Memory]) -> None:
    """On SQLite a shape's SQL goes to the driver's own cursor (qmark style), unless a
    query is being logged or wrapped: then Django's cursor counts and wraps it."""
    if connection.vendor != "sqlite":
        pytest.skip(
            "only SQLite's compiled reads take the driver's own cursor; on PostgreSQL they go "
            "through Django's as before, which the rest of this file checks there (the "
            "embedded pass runs this test)"
        )
    services.memory_update(memory=memories[2], description=f"{memories[2].name}, 100% sure")
    prepared = Prepared(by_ids, model=Memory, columns=COLUMNS)
    ids = [m.pk for m in memories]
    percent = Prepared(by_percent, model=Memory, columns=("pk",))  # a literal "%" in the SQL
    assert prepared_module._direct(connection)

    direct = prepared.rows(len(ids), *ids), percent.rows("p", memories[2].name)
    with CaptureQueriesContext(connection) as logged:
        assert (prepared.rows(len(ids), *ids), percent.rows("p", memories[2].name)) == direct
    assert len(logged) == 2  # through Django's cursor, so counted
    with connection.execute_wrapper(lambda execute, *args: execute(*args)):
        assert not prepared_module._direct(connection)
    assert direct == (list(by_ids(0, *ids).values_list(*COLUMNS)), [(memories[2].pk,)])
    shape = percent._shape("p", (str,))  # the SQL as Django's SQLite cursor would send it
    assert "%%" in shape.sql
    assert shape.qmark == SQLiteCursorWrapper.convert_query(None, shape.sql)  # type: ignore[arg-type]


def test_the_driver_cursor_keeps_djangos_transaction_checks(memories: list[Memory]) -> None:
    """A read inside a transaction that failed is refused, as Django's cursor refuses it."""
    prepared = Prepared(by_name, model=Memory, columns=("pk",))
    with transaction.atomic():
        transaction.set_rollback(True)
        with pytest.raises(TransactionManagementError):
            prepared.rows("by-name", memories[1].name)
