"""Compile-once SQL for the reads that run on every keystroke.

Django compiles a QuerySet to SQL each time it is evaluated. For the few
tiny queries the palette's fast path makes per keystroke (identifier lookup,
hydration, the settings row), compiling costs more than SQLite answering:
about 0.15-0.3 ms per query against tens of microseconds. `Prepared` builds a
query *shape* once, with placeholder values in place of the arguments,
keeps Django's SQL and column converters, and afterwards binds the real
values and converts each row exactly as Django would.

A shape is identified by a key the caller gives (for example the scope
filter and the number of ids); everything not passed as an argument is part
of the shape. Preparing refuses a query whose SQL does not carry every
placeholder verbatim as a parameter (a LIKE pattern, say), so a value can
never be silently baked into a cached statement. Shapes are cached per
database (alias and name), in a bounded LRU.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import QuerySet

_MARK = "\x00prepared-arg-{}\x00"


class _Shape:
    def __init__(self, qs: QuerySet[Any], arity: int, using: str) -> None:
        compiler = qs.query.get_compiler(using=using)
        self.empty = False
        try:
            sql, params = compiler.as_sql()
        except EmptyResultSet:  # e.g. `.none()`: no SQL, never any rows
            sql, params, self.empty = "", (), True
            arity = 0
        marks = {_MARK.format(i): i for i in range(arity)}
        self.slots: list[int | None] = [
            marks.get(p) if isinstance(p, str) else None for p in params
        ]
        if sorted(s for s in self.slots if s is not None) != list(range(arity)):
            raise ValueError(
                "a prepared query must take each argument verbatim as one SQL parameter: "
                f"{sql!r} {params!r}"
            )
        self.sql = sql
        self.constants = list(params)
        self.compiler = compiler
        columns = [column for column, _, _ in compiler.select or ()]
        self.converters = compiler.get_converters(columns)

    def rows(self, args: Sequence[Any], using: str) -> list[tuple[Any, ...]]:
        if self.empty:
            return []
        params = [
            args[slot] if slot is not None else value
            for slot, value in zip(self.slots, self.constants, strict=True)
        ]
        with connections[using].cursor() as cursor:
            cursor.execute(self.sql, params)
            rows = cursor.fetchall()
        if self.converters:
            return [tuple(row) for row in self.compiler.apply_converters(rows, self.converters)]
        return [tuple(row) for row in rows]


class Prepared:
    """A family of compiled query shapes built by `build(key, *placeholders)`.

    `build` receives the shape key and one placeholder per argument and
    returns the QuerySet (values_list or values of plain columns). `rows(key,
    *args)` runs the shape for `key` with `args` bound.
    """

    def __init__(
        self, build: Callable[..., QuerySet[Any]], *, using: str = "default", size: int = 256
    ) -> None:
        self._build = build
        self._using = using
        self._size = size
        self._shapes: OrderedDict[Hashable, _Shape] = OrderedDict()
        self._lock = threading.Lock()

    def rows(self, key: Hashable, *args: Any) -> list[tuple[Any, ...]]:
        return self._shape(key, len(args)).rows(args, self._using)

    def _shape(self, key: Hashable, arity: int) -> _Shape:
        database = connections[self._using].settings_dict["NAME"]
        full = (str(database), key, arity)
        with self._lock:
            shape = self._shapes.get(full)
            if shape is not None:
                self._shapes.move_to_end(full)
                return shape
        marks = [_MARK.format(i) for i in range(arity)]
        shape = _Shape(self._build(key, *marks), arity, self._using)
        with self._lock:
            self._shapes[full] = shape
            while len(self._shapes) > self._size:
                self._shapes.popitem(last=False)
        return shape
