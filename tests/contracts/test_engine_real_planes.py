"""The engine's behaviour tests, re-run on the real planes.

Every test of `tests/recall/` that takes the `make_engine` fixture is imported
here and collected again, once per full-text backend (tantivy, Whoosh), with
this module's `make_engine`: the text index is the real backend on disk and
the vector index is LanceDB on disk (wrapped in a spy that counts searches and
can be told to fail, like the reference `SpyVectorIndex`); and once more on
the PostgreSQL planes (tsvector text, pgvector vectors, tables of their own
on the test server, tests/pg.py). The store stays the
in-memory one (the relational side runs end to end in
`tests/console/test_engine_integration.py`), and the embedder stays
`FakeEmbedder`, whose hand-made vectors the tests' semantics rely on; the
real LanceDB prefilter and ranking still decide every semantic leg.

pytest resolves a test's fixtures from the module it is collected in, so
the imported tests pick up `make_engine` below; `test_imported_tests_use_this_
modules_fixture` checks that, and each behaviour is findable by name, e.g.
`test_engine_real_planes.py::test_in_scope_survives_out_of_scope_dominance[tantivy]`.
"""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from recall.config import Configs
from recall.engine import Engine
from recall.indexes.lance_index import LanceIndex
from recall.indexes.pg_text_index import PgTextIndex
from recall.indexes.pg_vector_index import PgVectorIndex
from recall.indexes.tantivy_index import TantivyIndex
from recall.indexes.whoosh_index import WhooshIndex
from recall.planes import Planes
from recall.ports import Embedder, VectorIndex
from recall.testing import FakeEmbedder, InMemoryStore
from recall.types import Filter, Record
from tests import pg
from tests.recall.conftest import NOW, MakeEngine, SpySearches, index, make_memory, uid

ROOT = Path(__file__).resolve().parents[2]
TEXT_BACKENDS = {"tantivy": TantivyIndex, "whoosh": WhooshIndex, "postgres": PgTextIndex}
BEHAVIOUR_MODULES = (
    "tests.recall.test_recall",
    "tests.recall.test_search",
    "tests.recall.test_briefing",
    "tests.recall.test_dedup",
    "tests.recall.test_expansion",
    "tests.recall.test_associated",
    "tests.recall.test_prompt",
    "tests.recall.test_channels",
    "tests.recall.test_engine",
    "tests.recall.test_routing",
    "tests.recall.test_session",  # the session neighbourhood (Dakera 004)
    "tests.recall.test_altitude",  # altitude digests (fabriq 000)
    "tests.recall.test_worth",  # importance and Memory Worth
    "tests.recall.test_decay",  # recency decay and expiry
)
# ANCHORS.md, seamless: "behaviours worth owning in ours too" (truncation is
# pure text, no planes: it runs in tests/recall and end to end in the console).
SEAMLESS = (
    "test_in_scope_survives_out_of_scope_dominance",
    "test_live_memory_survives_superseded_dominance_semantic",
    "test_live_memory_survives_superseded_dominance_lexical",
    "test_provider_failure_degrades_to_fts_with_warning",
    "test_vector_index_failure_degrades_to_fts_with_warning",
    "test_config_error_surfaces",
    "test_search_ignores_token_budget",
    "test_fast_path_never_calls_embedder",
    "test_floor_drops_weak_semantic_only_hits_and_exempts_lexical",
    "test_lexical_only_hit_has_no_similarity",
    "test_recall_never_sets_snippet_or_similarity",
    "test_snippets_carry_sentinels_not_markup",
    "test_kind_browse_lists_newest_first_and_skips_invalidated",
    "test_expansion_is_noop_without_edges",  # seamless: link expansion without bodies
    "test_superseded_duplicate_does_not_starve_live_one_in_dedup",
    "test_sealed_project_sees_no_global_hits",
    "test_override_row_applies_to_next_briefing",
)


def takes_make_engine(fn: object) -> bool:
    return callable(fn) and "make_engine" in inspect.signature(fn).parameters


def behaviour_tests(modules: Iterable[str]) -> dict[str, Callable[..., Any]]:
    """Every `test_*` function defined in `modules` that takes `make_engine`."""
    found: dict[str, Callable[..., Any]] = {}
    for name in modules:
        module = importlib.import_module(name)
        for attr, fn in vars(module).items():
            own = attr.startswith("test_") and getattr(fn, "__module__", None) == name
            if not own or not takes_make_engine(fn):
                continue
            if attr in found:
                raise ValueError(f"{attr} is defined in two behaviour modules")
            found[attr] = fn
    return found


IMPORTED = behaviour_tests(BEHAVIOUR_MODULES)
globals().update(IMPORTED)


class SpyLanceIndex(SpySearches, LanceIndex):
    """LanceDB with the same search spy as the reference `SpyVectorIndex`."""


class SpyPgVectorIndex(SpySearches, PgVectorIndex):
    """pgvector with the same search spy as the reference `SpyVectorIndex`."""


def real_planes(backend: str, home: Path, dims: int) -> tuple[Any, VectorIndex]:
    """The text index and the spied vector index of a backend, fresh under `home`."""
    if backend == "postgres":
        url = pg.database_url()
        return (
            PgTextIndex(dsn=url, table=pg.table_for(home / "text")),
            SpyPgVectorIndex(dsn=url, dims=dims, table=pg.table_for(home / "vectors")),
        )
    return TEXT_BACKENDS[backend](home / "text"), SpyLanceIndex(home / "vectors", dims=dims)


@pytest.fixture(params=sorted(TEXT_BACKENDS))
def make_engine(request: pytest.FixtureRequest, tmp_path: Path) -> MakeEngine:
    """tests/recall/conftest.py's make_engine, on a real text index and LanceDB.

    Each call gets fresh directories (some tests build several engines).
    """
    built = 0

    def make(
        records: Iterable[Record] = (),
        *,
        embedder: Embedder | None | str = "fake",
        vectors: VectorIndex | None | str = "spy",
        isolation: dict[str, str] | None = None,
        usage: dict[str, float] | None = None,
        clock: Any = lambda: NOW,
        **fields: Any,
    ) -> Engine:
        nonlocal built
        built += 1
        home = tmp_path / f"engine-{built}"
        fields.setdefault("background_rebuild", False)
        fields.setdefault("base", Configs())
        emb = FakeEmbedder() if embedder == "fake" else embedder
        assert not isinstance(emb, str)
        text, spy = real_planes(request.param, home, emb.dims if emb else 64)
        if vectors == "spy":
            vectors = spy
        assert not isinstance(vectors, str)
        planes = Planes(
            text=text,
            store=InMemoryStore(isolation=isolation, usage=usage, clock=clock),
            vectors=vectors,
            embedder=emb,
            clock=clock,
        )
        engine = Engine(planes, **fields)
        index(engine, records)
        return engine

    return make


# -- the re-run is what it claims to be -----------------------------------------


def test_the_engine_runs_on_the_real_planes(make_engine: MakeEngine, request: Any):
    engine = make_engine([make_memory(1, description="chroma boot race")])

    backend = request.node.callspec.params["make_engine"]
    assert type(engine.planes.text) is TEXT_BACKENDS[backend]
    vector_class = PgVectorIndex if backend == "postgres" else LanceIndex
    assert isinstance(engine.planes.vectors, vector_class)
    assert engine.planes.text.count() == 1 and engine.planes.vectors.count() == 1
    assert [
        c.id for c in engine.planes.vectors.search([0.0] * 63 + [1.0], where=Filter(), limit=5)
    ] == [uid(1)]


def test_every_seamless_behaviour_is_rerun_here():
    assert set(SEAMLESS) <= set(IMPORTED)
    assert all(globals()[name] is IMPORTED[name] for name in IMPORTED)


def test_every_make_engine_test_of_tests_recall_is_imported():
    modules = sorted(f"tests.recall.{p.stem}" for p in (ROOT / "tests/recall").glob("test_*.py"))
    everything = behaviour_tests(modules)

    assert set(everything) == set(IMPORTED)
    assert len(IMPORTED) >= 60


def test_imported_tests_use_this_modules_fixture():
    """pytest's own report of which `make_engine` an imported test gets."""
    target = f"{Path(__file__).relative_to(ROOT)}::{SEAMLESS[0]}"
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--fixtures-per-test", "-p", "no:cacheprovider", target],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout

    assert f"make_engine -- {Path(__file__).relative_to(ROOT)}" in out
    assert "make_engine -- tests/recall/conftest.py" not in out
