"""Compile-once SQL for the reads that run on every keystroke.

Django compiles a QuerySet to SQL each time it is evaluated. For the few
tiny queries the palette's fast path makes per keystroke (identifier lookup,
hydration, the settings row), compiling costs more than the database
answering: about 0.15-0.3 ms per query against tens of microseconds.
`Prepared` builds a query *shape* once, with placeholder values in place of
the arguments, keeps its SQL, and afterwards binds the real values and
converts each column as the ORM would.

Public Django API only, so it holds on both databases and across Django
releases: the SQL is what the ORM hands the database, caught by a
`connection.execute_wrapper` (the query itself is not run); each column's
conversion follows its model field (`Model._meta.get_field`): datetimes
aware in UTC (the databases' time zone: no DATABASES TIME_ZONE is set),
JSON decoded by the field's own `from_db_value`, booleans as bool.

A shape is identified by a key the caller gives (for example the scope
filter and the number of ids); everything not passed as an argument is part
of the shape. Arguments are strings, integers or datetimes: each is built
with a placeholder of its own type (a marked string, an integer, a moment in
year 1) that the ORM passes through to a parameter, and bound as the
database's adapter would pass the real value; the types are part of the shape.
Preparing refuses a query whose SQL does not carry every placeholder verbatim
as a parameter (a LIKE pattern, say), so a value can never be silently baked
into a cached statement. Shapes are cached per
database (alias and name), in a bounded LRU.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from django.core.exceptions import EmptyResultSet, FieldDoesNotExist
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model, QuerySet
from django.utils.asyncio import async_unsafe
from django.utils.dateparse import parse_datetime

from recall.lru import LRU

_MARK = "\x00prepared-arg-{}\x00"
# Integer placeholders count down from here: within a 32-bit integer column's
# range, or Django (5.0+) turns the lookup into "no rows" before any SQL exists.
_NUMBER = -987_654_321
_MOMENT = datetime(1, 1, 1, tzinfo=UTC)  # datetime placeholders: plus i + 1 microseconds

Convert = Callable[[Any], Any]
# Django's SQL marks a parameter "%s" (a literal percent "%%"); SQLite's driver takes "?".
_FORMAT_MARK = re.compile(r"(?<!%)%s")


def _qmark(sql: str) -> str:
    """`sql` in the SQLite driver's parameter style, as Django's SQLite cursor makes it."""
    return _FORMAT_MARK.sub("?", sql).replace("%%", "%")


def _direct(db: BaseDatabaseWrapper) -> bool:
    """Whether a shape's SQL may go to the SQLite driver's own cursor: no query is being
    logged (DEBUG, a test counting queries) and no execute wrapper is installed, which
    Django's cursor would serve."""
    return db.vendor == "sqlite" and not db.queries_logged and not db.execute_wrappers


@async_unsafe
def _fetch(db: BaseDatabaseWrapper, sql: str, params: Sequence[Any]) -> list[Any]:
    """`sql` (qmark style) run on the driver's cursor with what Django's cursor checks
    first (the connection open and healthy, this thread's, its transaction usable) and
    its errors made Django's. Django's cursor took about 40 us a read on top of the
    database's 3-5 (its wrappers, and the SQL converted to the qmark style each time):
    a Recall makes about a dozen reads."""
    db.close_if_health_check_failed()
    db.ensure_connection()
    db.validate_thread_sharing()
    db.validate_no_broken_transaction()
    with db.wrap_database_errors:
        cursor = db.connection.cursor()
        try:
            cursor.execute(sql, params)
            return list(cursor.fetchall())
        finally:
            cursor.close()


class _Caught(Exception):
    """Raised by the execute wrapper once it holds the SQL: nothing is run."""

    def __init__(self, sql: str, params: Sequence[Any]) -> None:
        super().__init__(sql)
        self.sql, self.params = sql, list(params)


def _catch(execute: Any, sql: str, params: Sequence[Any], many: bool, context: Any) -> None:
    raise _Caught(sql, params or ())


def _field(model: type[Model], path: str) -> Field[Any, Any] | None:
    """The field a values_list name reads: "pk", "name", "project__slug", "superseded_by_id";
    None for a name the model has no field of (an annotation of the queryset read,
    which is read as the database gives it)."""
    *joins, last = path.split("__")
    for name in joins:
        related = model._meta.get_field(name).related_model
        if related is None or isinstance(related, str):
            raise ValueError(f"{path!r}: {name!r} is not a relation")
        model = related
    if last == "pk":
        return model._meta.pk
    try:
        return model._meta.get_field(last)  # type: ignore[return-value]
    except FieldDoesNotExist:
        return None


def _aware(value: Any) -> Any:
    if isinstance(value, str):
        value = parse_datetime(value)
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


def _converter(field: Field[Any, Any] | None, using: str) -> Convert | None:
    if field is None:
        return None
    kind = field.get_internal_type()
    if kind == "DateTimeField":  # none for a driver that reads them aware (console.sqlitebackend)
        return None if getattr(connections[using], "moments_aware", False) else _aware
    if kind == "BooleanField":
        return lambda v: v if v is None else bool(v)
    if kind == "JSONField":
        connection = connections[using]
        plain = getattr(field, "decoder", None) is None

        def decode(value: Any) -> Any:
            if value == "[]" and plain:  # most memories' tags: what json.loads gives
                return []
            if isinstance(value, str | bytes | bytearray):
                return field.from_db_value(value, None, connection)  # type: ignore[attr-defined]
            return value  # a driver that decodes JSON itself

        return decode
    return None


def _kind(arg: Any) -> type:
    if isinstance(arg, datetime):
        return datetime
    if isinstance(arg, int) and not isinstance(arg, bool):
        return int
    if isinstance(arg, str):
        return str
    raise TypeError(f"a prepared argument is a str, int or datetime, not {type(arg).__name__}")


def _placeholder(i: int, kind: type) -> Any:
    if kind is datetime:
        return _MOMENT + timedelta(microseconds=i + 1)
    if kind is int:
        return _NUMBER - i
    return _MARK.format(i)


class _Shape:
    def __init__(
        self, qs: QuerySet[Any], kinds: Sequence[type], using: str, marks: Sequence[Any]
    ) -> None:
        arity = len(kinds)
        self.empty = False
        try:
            with connections[using].execute_wrapper(_catch):
                list(qs)
        except _Caught as caught:
            sql, params = caught.sql, caught.params
        else:  # e.g. `.none()`: no SQL, never any rows
            sql, params, self.empty = "", [], True
            arity = 0
        self.adapt = adapt = connections[using].ops.adapt_datetimefield_value
        self.moments = {i for i, kind in enumerate(kinds) if kind is datetime}
        passed = {  # each placeholder as the database receives it
            (adapt(m) if i in self.moments else m): i for i, m in enumerate(marks)
        }
        self.slots: list[int | None] = [
            passed.get(p) if isinstance(p, str | int | datetime) else None for p in params
        ]
        if sorted(s for s in self.slots if s is not None) != list(range(arity)):
            raise ValueError(
                "a prepared query must take each argument verbatim as one SQL parameter: "
                f"{sql!r} {params!r}"
            )
        self.sql = sql
        self.qmark = _qmark(sql)
        self.constants = params

    def _bind(self, args: Sequence[Any], slot: int) -> Any:
        return self.adapt(args[slot]) if slot in self.moments else args[slot]

    def rows(
        self, args: Sequence[Any], using: str, converters: Sequence[Convert | None]
    ) -> list[tuple[Any, ...]]:
        if self.empty:
            return []
        params = [
            value if slot is None else self._bind(args, slot)
            for slot, value in zip(self.slots, self.constants, strict=True)
        ]
        db = connections[using]
        if _direct(db):
            return _converted(_fetch(db, self.qmark, params), converters)
        with db.cursor() as cursor:
            cursor.execute(self.sql, params)
            rows = cursor.fetchall()
        return _converted(rows, converters)


def _converted(
    rows: Sequence[Sequence[Any]], converters: Sequence[Convert | None]
) -> list[tuple[Any, ...]]:
    convert = [(i, c) for i, c in enumerate(converters) if c is not None]
    if not convert:
        return [tuple(row) for row in rows]
    out = []
    for row in rows:  # only the columns that need it (hydration: 4 of 18)
        values = list(row)
        for i, c in convert:
            values[i] = c(values[i])
        out.append(tuple(values))
    return out


def read_rows(rows: QuerySet[Any], columns: Sequence[str]) -> list[tuple[Any, ...]]:
    """`rows.values_list(*columns)` as tuples, each column converted as a prepared
    shape converts it, for a query run once over many rows (a time-travel scope, a
    rebuild's batch): Django's own per-value converters took more time than the
    database at 15,000 rows (a cold Recall at 100,000 memories)."""
    using = rows.db
    query = rows.values_list(*columns).query
    try:
        sql, params = query.get_compiler(using).as_sql()
    except EmptyResultSet:  # e.g. `pk__in=[]`: no SQL, no rows
        return []
    fields = [_field(rows.model, c) for c in columns]
    with connections[using].cursor() as cursor:
        cursor.execute(sql, params)
        found = cursor.fetchall()
    return _converted(found, [_converter(f, using) for f in fields])


class Prepared:
    """A family of compiled query shapes of `model`, each read as `columns`.

    `build(key, *placeholders)` receives the shape key and one placeholder
    per argument and returns a QuerySet of `model` (filtered, ordered,
    sliced); Prepared reads it as `values_list(*columns)`. `rows(key, *args)`
    runs the shape for `key` with `args` bound: tuples as the ORM's
    values_list gives them.
    """

    def __init__(
        self,
        build: Callable[..., QuerySet[Any]],
        *,
        model: type[Model],
        columns: Sequence[str],
        using: str = "default",
        size: int = 256,
    ) -> None:
        self._build = build
        self._columns = tuple(columns)
        self._fields = [_field(model, c) for c in self._columns]
        self._using = using
        self._shapes: LRU[Hashable, _Shape] = LRU(size)
        self._converters: list[Convert | None] | None = None

    def rows(self, key: Hashable, *args: Any) -> list[tuple[Any, ...]]:
        if self._converters is None:
            self._converters = [_converter(f, self._using) for f in self._fields]
        kinds = tuple(_kind(a) for a in args)
        return self._shape(key, kinds).rows(args, self._using, self._converters)

    def _shape(self, key: Hashable, kinds: tuple[type, ...]) -> _Shape:
        database = connections[self._using].settings_dict["NAME"]
        full = (str(database), key, kinds)
        shape = self._shapes.get(full)
        if shape is not None:
            return shape
        marks = [_placeholder(i, kind) for i, kind in enumerate(kinds)]
        query = self._build(key, *marks).values_list(*self._columns)
        shape = _Shape(query, kinds, self._using, marks)
        self._shapes.put(full, shape)
        return shape
