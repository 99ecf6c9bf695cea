"""The `TextIndex` contract, run against every adapter.

tantivy and Whoosh are the real backends; `InMemoryTextIndex` is the
reference. A capability an adapter lacks is an explicit skip with the reason.
"""

from __future__ import annotations

import contextlib
import math
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from recall import background, bm25
from recall.errors import IndexUnavailable
from recall.indexes import layout
from recall.indexes.pg_text_index import PgTextIndex
from recall.indexes.tantivy_index import TantivyIndex, to_document
from recall.indexes.whoosh_index import WhooshIndex
from recall.ports import TextIndex
from recall.testing import InMemoryTextIndex
from recall.types import Doc, Filter
from tests import pg
from tests.contracts import filter_cases

ROOT = Path(__file__).resolve().parents[2]
ADAPTERS = ["tantivy", "whoosh", "memory", "postgres"]
REAL = {"tantivy": TantivyIndex, "whoosh": WhooshIndex}
EVERYTHING = Filter(active_only=False)


def make_doc(**overrides: Any) -> Doc:
    fields: dict[str, Any] = {
        "id": "m1",
        "item": "memory",
        "project": "alpha",
        "active": True,
        "kind": "fact",
        "name": "",
        "title": "",
        "description": "",
        "body": "",
    }
    fields.update(overrides)
    return Doc(**fields)


def build(kind: str, path: Path, **kwargs: Any) -> Any:
    if kind == "memory":
        return InMemoryTextIndex()
    if kind == "postgres":  # a table of its own per path, on the test server
        return PgTextIndex(dsn=pg.database_url(), table=pg.table_for(path), **kwargs)
    return REAL[kind](path, **kwargs)


@pytest.fixture(params=ADAPTERS)
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    return build(request.param, tmp_path / "fts")


@pytest.fixture(params=sorted(REAL))
def real(request: pytest.FixtureRequest) -> type[TantivyIndex] | type[WhooshIndex]:
    return REAL[request.param]


def search(index: Any, text: str, where: Filter = EVERYTHING, **kwargs: Any) -> list[str]:
    kwargs.setdefault("limit", 10)
    return [c.id for c in index.search(text, where=where, **kwargs)]


def marked(snippet: str | None) -> set[str]:
    """The lower-cased words wrapped in \\x01 ... \\x02."""
    assert snippet is not None
    spans = re.findall("\x01(.*?)\x02", snippet)
    return {w.lower() for span in spans for w in re.findall(r"[^\W_]+", span)}


# -- basics -------------------------------------------------------------------


def test_every_adapter_satisfies_the_port(index: Any) -> None:
    assert isinstance(index, TextIndex)


def test_an_upserted_doc_is_found_by_a_word_of_each_text_field(index: Any) -> None:
    index.upsert(
        [
            make_doc(
                name="alpha-name",
                title="Bravo title",
                description="charlie",
                body="delta",
                tags=("echo",),
            )
        ]
    )

    for word in ("alpha", "bravo", "charlie", "delta", "echo"):
        assert search(index, word) == ["m1"], word


def test_chinese_and_japanese_are_found_by_part_of_a_run(index: Any) -> None:
    """Written without spaces, a run of ideographs or kana was one word, found only
    whole: each character is a word of its own, so part of a run finds it too."""
    index.upsert(
        [
            make_doc(id="zh", body="发票任务每晚两点运行。"),
            make_doc(id="ja", body="日本語のテキストを検索する"),
            make_doc(id="en", body="the invoice job runs nightly"),
        ]
    )

    assert search(index, "发票任务") == ["zh"]
    assert search(index, "发票") == ["zh"]
    assert search(index, "検索") == ["ja"]
    assert search(index, "invoice 发票")[0] in {"zh", "en"}
    (hit,) = index.search("发票", where=EVERYTHING, limit=10, snippets=True)
    shown = "".join(re.findall("\x01(.*?)\x02", hit.snippet or ""))  # marked text
    assert "发" in shown and "票" in shown


def test_full_width_and_ascii_spellings_find_each_other(index: Any) -> None:
    """An IME in full-width mode types "Ｄｅｐｌｏｙ": the same word as "Deploy"."""
    index.upsert(
        [
            make_doc(id="wide", body="Ｄｅｐｌｏｙ ｔｈｅ ｂｉｌｌｉｎｇ ａｐｉ ｖ２"),
            make_doc(id="ascii", body="Deploy the billing api v2"),
        ]
    )

    assert sorted(search(index, "billing")) == ["ascii", "wide"]
    assert sorted(search(index, "ｂｉｌｌｉｎｇ")) == ["ascii", "wide"]
    assert sorted(search(index, "ｖ２")) == sorted(search(index, "v2")) == ["ascii", "wide"]


def test_accented_and_plain_spellings_find_each_other(index: Any) -> None:
    """Hermès and Hermes were different words: a search for one missed the other."""
    index.upsert(
        [
            make_doc(id="fr", name="hermès-notes", body="Hermès ships the café order via Łódź"),
            make_doc(id="en", body="Hermes Bay holds the cafe ledger"),
            make_doc(id="de", body="Die Straße bleibt gesperrt"),
        ]
    )

    assert sorted(search(index, "hermes")) == sorted(search(index, "Hermès")) == ["en", "fr"]
    assert sorted(search(index, "CAFÉ")) == ["en", "fr"]
    assert search(index, "lodz") == ["fr"] and search(index, "strasse") == ["de"]
    assert sorted(search(index, "herm", prefix=True)) == ["en", "fr"]
    assert search(index, "łód", prefix=True) == ["fr"]  # an accented prefix, as typed
    (hit,) = index.search("lodz", where=EVERYTHING, limit=10, snippets=True)
    assert "\x01Łódź\x02" in (hit.snippet or "")  # the text as written, marked


def test_upsert_replaces_a_doc_by_id(index: Any) -> None:
    index.upsert([make_doc(body="original wording")])
    index.upsert([make_doc(body="replacement wording")])

    assert search(index, "original") == []
    assert search(index, "replacement") == ["m1"]
    assert index.count() == 1


def test_the_last_version_wins_within_one_batch(index: Any) -> None:
    index.upsert([make_doc(body="first"), make_doc(body="second")])

    assert search(index, "first") == []
    assert search(index, "second") == ["m1"]
    assert index.count() == 1


def test_delete_removes_docs_and_ignores_unknown_ids(index: Any) -> None:
    index.upsert([make_doc(id="a", body="kiwi"), make_doc(id="b", body="kiwi")])

    index.delete(["a", "nope"])

    assert search(index, "kiwi") == ["b"]
    assert index.ids() == {"b"}


def test_ids_count_and_clear(index: Any) -> None:
    index.upsert([make_doc(id=f"d{i}", body="mango") for i in range(5)])
    assert index.ids() == {f"d{i}" for i in range(5)}
    assert index.count() == 5

    index.clear()

    assert index.count() == 0
    assert index.ids() == set()
    assert search(index, "mango") == []


def test_stemmed_forms_match(index: Any) -> None:
    index.upsert([make_doc(body="The service caches results.")])

    assert search(index, "caching") == ["m1"]


def test_a_slug_is_found_by_each_of_its_parts(index: Any) -> None:
    index.upsert([make_doc(name="chroma-boot-race", body="unrelated")])

    for word in ("chroma", "boot", "race", "chroma-boot-race"):
        assert search(index, word) == ["m1"], word


def test_operator_words_are_plain_text(index: Any) -> None:
    index.upsert([make_doc(id="a", body="do NOT restart"), make_doc(id="b", body="restart")])

    assert search(index, "NOT") == ["a"]


def test_snippets_are_none_unless_asked(index: Any) -> None:
    index.upsert([make_doc(body="papaya")])

    [hit] = index.search("papaya", where=EVERYTHING, limit=5)

    assert hit.snippet is None


def test_a_non_positive_limit_returns_nothing(index: Any) -> None:
    index.upsert([make_doc(body="papaya")])

    assert index.search("papaya", where=EVERYTHING, limit=0) == []


# -- hostile input ------------------------------------------------------------

HOSTILE = [
    "",
    "   \t\n ",
    "!!! ??? ...",
    "a",
    "AND OR NOT",
    '"unbalanced',
    "(grouping) [x] {y}",
    "- -- title:body *wild* ~2 ^3",
    "\U0001f680 \U0001f525",
    "nul\x00byte",
    "word " * 2000,
    "x" * 10_000,
]


@pytest.mark.parametrize(
    ("text", "prefix", "where"),
    [
        ("chroma boot", False, EVERYTHING),
        ("boot chro", True, EVERYTHING),
        ("race", False, Filter(projects=("alpha",), include_global=False, active_only=False)),
        ("boot ra", True, Filter(projects=("beta",), active_only=False)),
    ],
)
def test_snippets_for_some_ids_are_the_ones_search_gives(
    index: Any, text: str, prefix: bool, where: Filter
) -> None:
    # A search ranks 500 deep without snippets, then asks them for its page alone.
    index.upsert([
        make_doc(id=f"m{n}", project=("alpha", "beta", None)[n % 3],
                 title=f"Chroma note {n}", description="a boot race" if n % 2 else "chrome",
                 body=" ".join(["filler words here"] * n + ["chroma boot race", "the end"]))
        for n in range(12)
    ])  # fmt: skip
    found = index.search(text, where=where, limit=20, snippets=True, prefix=prefix)
    asked = [c.id for c in found][1::2] + ["m404", "m1", "m2"]  # out of scope in some

    given = index.snippets(text, asked, where=where, prefix=prefix)

    assert len(found) > 2
    assert given == {c.id: c.snippet for c in found if c.id in asked}
    assert index.snippets(text, [], where=where, prefix=prefix) == {}
    assert index.snippets("?!", asked, where=where, prefix=prefix) == {}


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
@pytest.mark.parametrize("prefix", [False, True])
def test_hostile_text_never_raises(index: Any, text: str, prefix: bool) -> None:
    index.upsert([make_doc(body="word and title body")])

    result = index.search(text, where=EVERYTHING, limit=5, snippets=True, prefix=prefix)

    assert isinstance(result, list)
    assert len(result) <= 5


@pytest.mark.parametrize("text", ["", "   ", "?!", "a", "\x00"])
def test_text_without_usable_words_returns_nothing(index: Any, text: str) -> None:
    index.upsert([make_doc(body="a b c")])

    assert index.search(text, where=EVERYTHING, limit=5) == []


def test_a_nul_byte_separates_words(index: Any) -> None:
    index.upsert([make_doc(body="nul byte")])

    assert search(index, "nul\x00byte") == ["m1"]


# -- ranking ------------------------------------------------------------------


def test_ranks_are_contiguous_and_scores_descend(index: Any) -> None:
    index.upsert(
        [
            make_doc(id="one", body="pear"),
            make_doc(id="two", body="pear pear apple"),
            make_doc(id="three", body="pear apple apple apple fig fig fig fig"),
            make_doc(id="four", body="apple"),
        ]
    )

    hits = index.search("pear", where=EVERYTHING, limit=10)

    assert [h.rank for h in hits] == [1, 2, 3]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert hits[-1].id == "three"
    assert all(h.score > 0 for h in hits)


def test_ties_break_by_id_ascending_even_past_the_fetch_window(index: Any) -> None:
    ids = [f"id{n:02d}" for n in range(40)]
    index.upsert([make_doc(id=i, body="same words here") for i in reversed(ids)])

    hits = index.search("same", where=EVERYTHING, limit=5)

    assert [h.id for h in hits] == ids[:5]
    assert [h.rank for h in hits] == [1, 2, 3, 4, 5]
    assert len({h.score for h in hits}) == 1


def test_more_matched_words_rank_higher(index: Any) -> None:
    index.upsert(
        [
            make_doc(id="both", body="redis eviction policy"),
            make_doc(id="one", body="redis cluster setup"),
        ]
    )

    assert search(index, "redis eviction") == ["both", "one"]


def test_context_counts_less_than_body_and_is_never_shown(index: Any) -> None:
    index.upsert(
        [
            make_doc(id="ctx", body="other text", context=("zeppelin story",)),
            make_doc(id="body", body="zeppelin story"),
        ]
    )

    hits = index.search("zeppelin", where=EVERYTHING, limit=5, snippets=True)

    assert [h.id for h in hits] == ["body", "ctx"]
    assert hits[0].score > hits[1].score
    assert "zeppelin" not in (hits[1].snippet or "")


# -- filters ------------------------------------------------------------------

GRID = [
    make_doc(id=f"{project or 'global'}-{item}-{kind}-{active}", project=project,
             item=item, kind=kind, active=active, body="widget")
    for project in ("alpha", "beta", None)
    for item in ("memory", "note")
    for kind in ("fact", "gotcha")
    for active in (True, False)
]  # fmt: skip

FILTERS = [
    Filter(),
    Filter(active_only=False),
    Filter(projects=("alpha",)),
    Filter(projects=("alpha",), include_global=False),
    Filter(projects=(), include_global=True),
    Filter(projects=None, include_global=False),
    Filter(items=("note",)),
    Filter(kinds=("gotcha",), active_only=False),
    Filter(projects=("beta",), items=("memory",), kinds=("fact",), include_global=False),
    Filter(items=()),
]


@pytest.mark.parametrize("where", FILTERS, ids=range(len(FILTERS)))
def test_filters_agree_with_the_reference_predicate(index: Any, where: Filter) -> None:
    index.upsert(GRID)
    expected = {
        d.id
        for d in GRID
        if where.admits(project=d.project, active=d.active, item=d.item, kind=d.kind)
    }

    assert set(search(index, "widget", where, limit=100)) == expected


SCOPE_MISSES: list[tuple[str, dict[str, Any], Filter]] = [
    ("project", {"project": "beta"}, Filter(projects=("alpha",))),
    ("inactive", {"active": False}, Filter()),
    ("global", {"project": None}, Filter(include_global=False)),
    ("item", {"item": "note"}, Filter(items=("memory",))),
    ("kind", {"kind": "gotcha"}, Filter(kinds=("fact",))),
]


@pytest.mark.parametrize(
    ("label", "strong", "where"), SCOPE_MISSES, ids=[m[0] for m in SCOPE_MISSES]
)
def test_filters_apply_before_the_limit(
    index: Any, label: str, strong: dict[str, Any], where: Filter
) -> None:
    loud = [make_doc(id=f"out{i:02d}", body="turbine " * 5, **strong) for i in range(50)]
    quiet = make_doc(id="in", body="turbine " + "filler " * 40)
    index.upsert([*loud, quiet])

    assert search(index, "turbine", where, limit=5) == ["in"]


# -- prefix -------------------------------------------------------------------


def test_the_last_word_matches_as_a_prefix_only_when_asked(index: Any) -> None:
    index.upsert([make_doc(body="chroma server")])

    assert search(index, "chro", prefix=True) == ["m1"]
    assert search(index, "chro") == []


def test_a_prefix_matches_words_whose_stem_is_shorter(index: Any) -> None:
    index.upsert([make_doc(body="a deployment went wrong")])

    assert search(index, "deploym", prefix=True) == ["m1"]


def test_a_whole_last_word_still_matches_with_prefix_on(index: Any) -> None:
    index.upsert([make_doc(body="several deployments")])

    assert search(index, "deploying", prefix=True) == ["m1"]


def test_only_the_last_word_is_a_prefix(index: Any) -> None:
    index.upsert([make_doc(body="chroma server")])

    assert search(index, "chro zzz", prefix=True) == []
    assert search(index, "zzz chro", prefix=True) == ["m1"]


@pytest.mark.parametrize("typed", ["c", "ch"])
def test_a_one_or_two_letter_prefix(index: Any, typed: str) -> None:
    if isinstance(index, WhooshIndex):
        pytest.skip("Whoosh expands prefixes from 3 characters (cost); shorter is a plain word")
    index.upsert([make_doc(id="a", body="chroma"), make_doc(id="b", body="duckdb")])

    assert search(index, typed, prefix=True) == ["a"]


def test_tantivy_expansions_skip_words_in_most_documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recall.indexes import tantivy_index

    monkeypatch.setattr(tantivy_index, "PREFIX_COMMON_MIN", 2)  # a small index's scale
    index = TantivyIndex(tmp_path / "fts")
    common = [make_doc(id=f"c{n}", body="the usual words") for n in range(6)]
    index.upsert([*common, make_doc(id="t", body="a thread dump")])

    assert search(index, "th", prefix=True) == ["t"]  # "the" (6 of 7 docs) is skipped
    assert len(search(index, "the", prefix=False)) == 6  # a typed word is never skipped


def test_tantivy_scores_are_bm25f_over_own_text_and_previous_turns(tmp_path: Path) -> None:

    index = TantivyIndex(tmp_path / "fts")
    index.upsert(
        [
            make_doc(id="own", body="zeppelin story told twice"),
            make_doc(id="prev", body="yes it was", context=("the zeppelin landed",)),
            make_doc(id="none", body="nothing to see here at all"),
        ]
    )
    params = bm25.Bm25F()
    avglen = (4 + 3 + 6) / 3
    # df from the own texts alone, and the prior's rows of English (recall/background.py)
    share = 1 - math.exp(-background.frequency("zeppelin") * avglen)
    weights = {"zeppelin": bm25.idf(1 + params.prior_rows * share, 3 + params.prior_rows) ** 2}

    hits = {c.id: c.score for c in index.search("zeppelin", where=EVERYTHING, limit=5)}

    streams = {"own": [["zeppelin", "stori", "told", "twice"]],
               "prev": [["yes", "it", "was"], ["the", "zeppelin", "land"]]}  # fmt: skip
    assert set(hits) == {"own", "prev"}
    for doc_id, doc_streams in streams.items():
        counts, lengths = bm25.count_terms(bm25.encode(doc_streams), ["zeppelin"])
        expected = bm25.score(counts, lengths, weights, avglen=avglen, params=params)
        assert hits[doc_id] == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("kind", ["tantivy", "postgres"])
def test_a_small_scope_weighs_a_word_rare_in_english_above_a_common_one(
    kind: str, tmp_path: Path
) -> None:
    """Two words each held by one memory of three: counted over the scope alone
    they weigh the same, and the tie went to the lower id. A scope's idf leans on
    general English (recall/background.py): "people" is common there, "zeppelin"
    rare, so the memory holding "zeppelin" ranks first. The BM25F planes only:
    Whoosh and the in-memory plane keep their own scorers."""
    index = build(kind, tmp_path / "fts")
    index.upsert(
        [
            make_doc(id="a", body="we met the people there"),
            make_doc(id="b", body="we met the zeppelin there"),
            make_doc(id="c", body="nothing else was said at all"),
        ]
    )

    assert search(index, "people zeppelin", where=Filter(projects=("alpha",))) == ["b", "a"]


def test_tantivy_ranks_a_long_text_by_its_passage_holding_the_rare_word(tmp_path: Path) -> None:
    """A 40 KB runbook holding `glacier-billing-zq81` once, among 80 short memories
    holding "billing": over its whole length the runbook scored below all of them
    (recall/bm25.py, passages), and tantivy's own BM25 left it out of the 50 it
    re-scores (`RARE_DF`). Read as its best passage it ranks first. Only tantivy's
    BM25F re-score reads passages: Whoosh and PostgreSQL score whole texts."""
    index = TantivyIndex(tmp_path / "fts")
    steps = [f"Step {n}: check the replica {n % 7} and log the figure." for n in range(900)]
    steps[400] = "If the restore stalls, thaw the bucket glacier-billing-zq81 first."
    index.upsert(
        [make_doc(id="runbook", body=" ".join(steps))]
        + [make_doc(id=f"bill{n}", body=f"Billing note {n}: invoices go out.") for n in range(80)]
        + [make_doc(id=f"other{n}", body=f"The kettle {n} is in the cupboard.") for n in range(300)]
    )

    assert search(index, "glacier-billing-zq81")[0] == "runbook"
    assert search(index, "which bucket is glacier-billing-zq81?")[0] == "runbook"


def test_tantivy_weighs_the_turn_just_before_above_the_one_two_back(tmp_path: Path) -> None:
    index = TantivyIndex(tmp_path / "fts")
    index.upsert(
        [
            make_doc(id="a-two-back", body="sure", context=("", "zeppelin")),
            make_doc(id="b-just-before", body="sure", context=("zeppelin",)),
        ]
    )

    assert search(index, "zeppelin") == ["b-just-before", "a-two-back"]


def test_prefix_results_respect_the_filter(index: Any) -> None:
    index.upsert([make_doc(id="a", body="chroma"), make_doc(id="b", body="chroma", active=False)])

    assert search(index, "chro", Filter(), prefix=True) == ["a"]


# -- snippets -----------------------------------------------------------------


def test_snippets_wrap_matched_terms_in_sentinels_as_raw_text(index: Any) -> None:
    index.upsert([make_doc(body="if a < b & c then the cache <b>flushes</b>")])

    [hit] = index.search("cache", where=EVERYTHING, limit=5, snippets=True)

    assert hit.snippet is not None
    assert "\x01cache\x02" in hit.snippet
    assert "a < b & c" in hit.snippet
    assert hit.snippet.count("<b>") == 1  # the document's own text, not markup


def test_snippets_handle_non_ascii_text(index: Any) -> None:
    index.upsert([make_doc(body="café über naïve résumé ünïcödé")])

    [hit] = index.search("naïve", where=EVERYTHING, limit=5, snippets=True)

    assert hit.snippet is not None
    assert "\x01naïve\x02" in hit.snippet
    assert "café über" in hit.snippet


def test_snippets_fall_back_to_the_description(index: Any) -> None:
    index.upsert([make_doc(body="nothing relevant", description="the quokka hops")])

    [hit] = index.search("quokka", where=EVERYTHING, limit=5, snippets=True)

    assert hit.snippet is not None
    assert "\x01quokka\x02" in hit.snippet


def test_a_snippet_is_a_short_fragment_around_the_match(index: Any) -> None:
    body = " ".join(["lorem"] * 150 + ["walrus"] + ["ipsum"] * 150)
    index.upsert([make_doc(body=body)])

    [hit] = index.search("walrus", where=EVERYTHING, limit=5, snippets=True)

    assert hit.snippet is not None
    assert "\x01walrus\x02" in hit.snippet
    assert 8 <= len(hit.snippet.split()) <= 40


def test_a_snippet_without_a_match_in_its_fields_is_the_plain_head(index: Any) -> None:
    index.upsert([make_doc(name="koala-notes", body="a plain body text")])

    [hit] = index.search("koala", where=EVERYTHING, limit=5, snippets=True)

    assert hit.snippet is not None
    assert "plain body" in hit.snippet


def test_prefix_expansions_are_highlighted(index: Any) -> None:
    index.upsert([make_doc(body="the chroma store")])

    [hit] = index.search("chro", where=EVERYTHING, limit=5, snippets=True, prefix=True)

    assert marked(hit.snippet) == {"chroma"}


# -- the real backends only ---------------------------------------------------


def test_writes_are_durable_across_instances(real: Any, tmp_path: Path) -> None:
    real(tmp_path / "fts").upsert([make_doc(body="persisted")])

    assert search(real(tmp_path / "fts"), "persisted") == ["m1"]


def test_a_missing_directory_is_created(real: Any, tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "fts"

    real(path)

    assert path.is_dir()


def test_a_corrupt_index_is_unavailable(real: Any, tmp_path: Path) -> None:
    path = tmp_path / "fts"
    real(path).upsert([make_doc(body="damage")])
    for f in path.iterdir():
        lock = f.name.endswith(".lock") or "LOCK" in f.name
        if f.is_file() and not lock and f.name != layout.MARKER:
            f.write_bytes(b"\x00garbage")

    with pytest.raises(IndexUnavailable):
        real(path).search("damage", where=EVERYTHING, limit=5)


def test_a_path_that_is_a_file_is_unavailable_until_mended(real: Any, tmp_path: Path) -> None:
    # Opened at each use, not only when built: a server built on a damaged folder
    # goes on answering from its other planes, and reads it once it is mended.
    path = tmp_path / "fts"
    path.write_text("not a directory")
    index = real(path)

    with pytest.raises(IndexUnavailable):
        index.search("mended", where=EVERYTHING, limit=5)
    with pytest.raises(IndexUnavailable):
        index.upsert([make_doc(body="mended")])
    path.unlink()
    index.upsert([make_doc(body="mended")])

    assert search(index, "mended") == ["m1"]


@pytest.mark.parametrize("kwargs", [{"writer_heap_mb": 0}, {"lock_timeout_s": -1}])
def test_bad_settings_are_a_value_error(real: Any, tmp_path: Path, kwargs: Any) -> None:
    with pytest.raises(ValueError):
        real(tmp_path / "fts", **kwargs)


@pytest.fixture
def hold_lock(tmp_path: Path) -> Iterator[Callable[[str], Callable[[], None]]]:
    """Hold a backend's writer lock from a second handle; returns a release."""
    releases: list[Callable[[], None]] = []

    def hold(kind: str) -> Callable[[], None]:
        path = tmp_path / "fts"
        if kind == "tantivy":
            import tantivy

            writer = tantivy.Index.open(str(path)).writer(heap_size=15_000_000, num_threads=1)
            release = writer.wait_merging_threads
        else:
            from whoosh import index as windex

            writer = windex.open_dir(str(path)).writer()
            release = writer.cancel
        releases.append(release)
        return release

    yield hold
    for release in releases:
        with contextlib.suppress(Exception):  # already released by the test
            release()


@pytest.mark.parametrize("kind", sorted(REAL))
def test_a_busy_lock_times_out_as_unavailable(kind: str, tmp_path: Path, hold_lock: Any) -> None:
    index = build(kind, tmp_path / "fts", lock_timeout_s=0.3)
    hold_lock(kind)
    started = time.monotonic()

    with pytest.raises(IndexUnavailable, match="locked by another writer"):
        index.upsert([make_doc(body="blocked")])

    assert time.monotonic() - started >= 0.3
    assert index.count() == 0


@pytest.mark.parametrize("kind", sorted(REAL))
def test_a_writer_waits_for_the_lock_to_free(kind: str, tmp_path: Path, hold_lock: Any) -> None:
    index = build(kind, tmp_path / "fts", lock_timeout_s=10)
    release = hold_lock(kind)
    threading.Timer(0.3, release).start()

    index.upsert([make_doc(body="patient")])

    assert search(index, "patient") == ["m1"]


SEARCH_ELSEWHERE = """
import sys
from recall.indexes.{module} import {cls}
from recall.types import Filter
ix = {cls}(sys.argv[1], lock_timeout_s=0.2)
print(",".join(c.id for c in ix.search("visible", where=Filter(), limit=5)))
"""


@pytest.mark.parametrize("kind", sorted(REAL))
def test_another_process_searches_while_a_writer_holds_the_lock(
    kind: str, tmp_path: Path, hold_lock: Any
) -> None:
    build(kind, tmp_path / "fts").upsert([make_doc(body="visible")])
    hold_lock(kind)
    cls = REAL[kind]
    code = SEARCH_ELSEWHERE.format(module=cls.__module__.rsplit(".", 1)[1], cls=cls.__name__)

    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "fts")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )

    assert out.stdout.strip() == "m1"


# -- parity across adapters ---------------------------------------------------

CORPUS = {
    "deploy-blue-green": "Blue green deployment switches traffic between two identical "
    "environments so a release can roll back instantly.",
    "deploy-canary": "A canary release sends a small share of traffic to the new version "
    "before the full rollout.",
    "deploy-k8s-rollout": "Kubernetes rollout status waits until every pod of the "
    "deployment is ready.",
    "ci-pipeline": "The CI pipeline runs lint, unit tests and builds the container image "
    "on every push.",
    "ci-flaky-tests": "Flaky tests fail at random; quarantine them and track the flake rate.",
    "db-postgres-vacuum": "Postgres autovacuum reclaims dead tuples; tune it for tables "
    "with heavy updates.",
    "db-index-btree": "A btree index speeds equality and range lookups on a column.",
    "db-migrations": "Schema migrations must be backward compatible so old code keeps "
    "running during the deploy.",
    "db-connection-pool": "A connection pool such as pgbouncer keeps database connections "
    "warm and bounded.",
    "db-replication-lag": "Replication lag on the read replica makes fresh writes invisible "
    "for a few seconds.",
    "cache-redis-eviction": "Redis eviction policy allkeys-lru drops the least recently "
    "used keys when memory is full.",
    "cache-stampede": "A cache stampede happens when many requests miss the cache at once; "
    "use request coalescing.",
    "cache-invalidation": "Cache invalidation on write keeps readers from seeing stale values.",
    "cache-cdn": "The CDN edge caches static assets for a day; purge it after a release.",
    "queue-kafka-partitions": "Kafka partitions bound consumer parallelism; one consumer "
    "per partition.",
    "queue-dead-letter": "Messages that fail repeatedly go to a dead letter queue for inspection.",
    "queue-idempotency": "Consumers must be idempotent because the broker delivers at least once.",
    "obs-tracing": "Distributed tracing follows one request across services with a trace id.",
    "obs-alerting": "Alert on symptoms such as error rate and latency, not on causes.",
    "obs-logging": "Structured logging in JSON makes logs searchable by field.",
    "sec-secrets": "Secrets live in the vault, never in the repository or the container image.",
    "sec-tls-rotation": "TLS certificates rotate every ninety days through an automated job.",
    "net-dns-ttl": "A low DNS TTL before a migration lets clients follow the new address quickly.",
    "net-timeouts": "Every outbound call needs a timeout and a retry budget with jitter.",
    "api-pagination": "Cursor pagination stays stable when rows are inserted between pages.",
    "api-rate-limit": "The API rate limit uses a token bucket per client key.",
    "py-async": "Blocking calls inside async code stall the event loop; run them in a thread.",
    "py-packaging": "Pin every dependency in a lock file so builds are reproducible.",
    "git-rebase": "Rebase a feature branch onto main before merging to keep history linear.",
    "search-bm25": "BM25 ranks documents by term frequency, inverse document frequency and length.",
}

TOP1 = [
    ("eviction", "cache-redis-eviction"),
    ("autovacuum dead tuples", "db-postgres-vacuum"),
    ("canary", "deploy-canary"),
    ("kafka consumer partitions", "queue-kafka-partitions"),
    ("stampede coalescing", "cache-stampede"),
    ("pgbouncer", "db-connection-pool"),
    ("tracing", "obs-tracing"),
    ("flaky quarantine", "ci-flaky-tests"),
]

TOP3 = [
    ("cache", {"cache-stampede", "cache-invalidation", "cache-cdn"}),
    ("rollout", {"deploy-canary", "deploy-k8s-rollout"}),
]


@pytest.fixture(scope="module")
def corpus_indexes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    docs = [
        make_doc(id=name, name=name, title=name.replace("-", " "), body=body)
        for name, body in CORPUS.items()
    ]
    out = {}
    for kind in ADAPTERS:
        out[kind] = build(kind, tmp_path_factory.mktemp(kind))
        out[kind].upsert(docs)
    return out


@pytest.mark.parametrize(("query", "expected"), TOP1, ids=[q for q, _ in TOP1])
def test_adapters_agree_on_the_best_hit(
    corpus_indexes: dict[str, Any], query: str, expected: str
) -> None:
    tops = {kind: search(ix, query, limit=1) for kind, ix in corpus_indexes.items()}

    assert tops == {kind: [expected] for kind in ADAPTERS}


@pytest.mark.parametrize(("query", "expected"), TOP3, ids=[q for q, _ in TOP3])
def test_adapters_agree_on_the_top_three(
    corpus_indexes: dict[str, Any], query: str, expected: set[str]
) -> None:
    for kind, ix in corpus_indexes.items():
        top = set(search(ix, query, limit=3))
        assert expected <= top, kind


@pytest.mark.parametrize("query", ["cache invalidation", "replication lag", "tests"])
def test_adapters_agree_on_the_highlighted_terms(
    corpus_indexes: dict[str, Any], query: str
) -> None:
    best = {kind: ix.search(query, where=EVERYTHING, limit=1, snippets=True)[0]
            for kind, ix in corpus_indexes.items()}  # fmt: skip

    assert len({hit.id for hit in best.values()}) == 1
    wrapped = {kind: marked(hit.snippet) for kind, hit in best.items()}
    assert wrapped["tantivy"]
    assert wrapped["tantivy"] == wrapped["whoosh"] == wrapped["memory"]


def test_updating_a_corpus_doc_changes_its_rank(tmp_path: Path) -> None:
    for kind in ADAPTERS:
        ix = build(kind, tmp_path / kind)
        a = make_doc(id="a", body="zebra crossing")
        b = make_doc(id="b", body="zebra zebra zebra")
        ix.upsert([a, b])
        assert search(ix, "zebra") == ["b", "a"], kind
        ix.upsert([replace(b, body="horse")])
        assert search(ix, "zebra") == ["a"], kind


# -- fingerprints and layout ----------------------------------------------------


def test_fingerprints_list_one_pair_per_row_as_written(index: Any) -> None:
    first, other = make_doc(id="a", body="one"), make_doc(id="b", body="two")
    index.upsert([first, other])
    assert sorted(index.fingerprints()) == sorted(
        [("a", first.fingerprint()), ("b", other.fingerprint())]
    )

    moved = make_doc(id="a", body="one", project="beta")
    index.upsert([moved])
    assert sorted(index.fingerprints()) == sorted(
        [("a", moved.fingerprint()), ("b", other.fingerprint())]
    )
    assert moved.fingerprint() != first.fingerprint()


def test_an_index_in_an_older_layout_is_cleared_on_open(real: Any, tmp_path: Path) -> None:
    path = tmp_path / "fts"
    real(path).upsert([make_doc(body="layout")])
    (path / layout.MARKER).write_text("1\n", encoding="ascii")

    reopened = real(path)
    assert reopened.ids() == set()
    reopened.upsert([make_doc(body="layout")])
    assert real(path).ids() == {"m1"}


# -- Recall's attribute filters (tags ... until) ----------------------------------


def attribute_grid() -> list[Doc]:
    return [
        make_doc(id=f"a{n:02d}", body="widget", project=["alpha", None][n % 2],
                 kind=["fact", "gotcha"][n % 3 == 0], **filter_cases.attributes(n))
        for n in range(filter_cases.GRID_SIZE)
    ]  # fmt: skip


@pytest.mark.parametrize("where", filter_cases.FILTERS, ids=range(len(filter_cases.FILTERS)))
def test_attribute_filters_agree_with_the_reference_predicate(index: Any, where: Filter) -> None:
    grid = attribute_grid()
    index.upsert(grid)
    expected = {d.id for d in grid if where.admits_record(d)}

    assert expected  # every case admits something, so a plane that drops all fails
    assert set(search(index, "widget", where, limit=100)) == expected


@pytest.mark.parametrize(
    ("label", "refused", "admitted", "where"),
    filter_cases.NARROW,
    ids=[c[0] for c in filter_cases.NARROW],
)
def test_attribute_filters_apply_before_the_limit(
    index: Any, label: str, refused: dict[str, Any], admitted: dict[str, Any], where: Filter
) -> None:
    loud = [make_doc(id=f"out{i:02d}", body="turbine " * 5, **refused) for i in range(45)]
    quiet = [make_doc(id=f"in{i}", body="turbine " + "filler " * 40, **admitted) for i in range(5)]
    index.upsert([*loud, *quiet])

    assert search(index, "turbine", limit=5) == [d.id for d in loud[:5]]  # unfiltered: all out
    assert search(index, "turbine", where, limit=5) == [d.id for d in quiet]


# -- the stamp the hot tier keys on (recall.tiers) ------------------------------


def test_a_real_index_stamp_moves_with_every_commit_of_any_handle(
    real: type[TantivyIndex] | type[WhooshIndex], tmp_path: Path
) -> None:
    index = real(tmp_path / "fts")
    other = real(tmp_path / "fts")  # what another process holds
    index.upsert([make_doc()])
    before = index.stamp()

    assert before is not None and index.stamp() == before  # nothing committed since
    other.upsert([make_doc(body="changed wording")])  # same id, same count
    assert index.stamp() != before
    moved = index.stamp()
    other.delete(["m1"])
    assert index.stamp() != moved


def test_a_real_index_reads_another_handles_commit_at_once(
    real: type[TantivyIndex] | type[WhooshIndex], tmp_path: Path
) -> None:
    """A write in one gunicorn worker is found by a search in another straight away
    (tantivy's own reload watcher polls meta.json only every 500 ms)."""
    index = real(tmp_path / "fts")
    other = real(tmp_path / "fts")  # what another process holds
    index.upsert([make_doc(id="m1", body="first words")])
    assert search(other, "first") == ["m1"]

    for n in range(2, 6):  # each commit read at once, not one poll later
        index.upsert([make_doc(id=f"m{n}", body=f"gunicorn answers {n}")])
        assert f"m{n}" in search(other, "gunicorn", limit=10)
    index.delete(["m1"])
    assert search(other, "first") == []
    assert other.count() == 4


# -- tantivy's bulk writer (a rebuild) -----------------------------------------


def test_tantivy_bulk_writes_are_seen_together_when_the_block_ends(tmp_path: Path) -> None:
    index = TantivyIndex(tmp_path / "fts")
    index.upsert([make_doc(id="old", body="harbour")])
    reader = TantivyIndex(tmp_path / "fts")  # another handle, as another process has

    with index.bulk():
        index.clear()
        index.upsert([make_doc(id="new-1", body="harbour")])
        index.upsert([make_doc(id="new-2", body="harbour")])
        assert search(reader, "harbour") == ["old"]  # nothing committed yet
        assert search(index, "harbour") == ["old"]

    assert search(index, "harbour") == ["new-1", "new-2"]
    assert search(reader, "harbour") == ["new-1", "new-2"]


def test_a_tantivy_bulk_that_raises_leaves_the_index_as_it_was(tmp_path: Path) -> None:
    index = TantivyIndex(tmp_path / "fts", lock_timeout_s=0)

    index.upsert([make_doc(id="old", body="harbour")])
    with pytest.raises(RuntimeError), index.bulk():
        index.clear()
        index.upsert([make_doc(id="new", body="harbour")])
        raise RuntimeError("the rebuild died")

    assert search(index, "harbour") == ["old"]
    index.upsert([make_doc(id="after", body="harbour")])  # the writer lock was released
    assert search(index, "harbour") == ["after", "old"]


def write_from_another_thread(index: TantivyIndex) -> list[IndexUnavailable]:
    """Upsert one document from a thread of its own; what it raised."""
    failures: list[IndexUnavailable] = []

    def write() -> None:
        try:
            index.upsert([make_doc(id="other-thread", body="harbour")])
        except IndexUnavailable as exc:
            failures.append(exc)

    other = threading.Thread(target=write)
    other.start()
    other.join()
    return failures


def test_another_thread_waits_for_a_tantivy_bulk_instead_of_writing_into_it(
    tmp_path: Path,
) -> None:
    index = TantivyIndex(tmp_path / "fts", lock_timeout_s=0)

    with index.bulk():
        index.upsert([make_doc(id="bulk", body="harbour")])
        failures = write_from_another_thread(index)

    assert len(failures) == 1 and "locked" in str(failures[0])
    assert search(index, "harbour") == ["bulk"]


# -- the index worker's kept writer ----------------------------------------------


def test_a_kept_tantivy_writer_commits_each_write_and_holds_the_lock_between_them(
    tmp_path: Path,
) -> None:
    index = TantivyIndex(tmp_path / "fts")
    reader = TantivyIndex(tmp_path / "fts")  # another process's handle
    other = TantivyIndex(tmp_path / "fts", lock_timeout_s=0)

    with index.kept():
        index.upsert([make_doc(id="m1", body="harbour")])
        assert search(reader, "harbour") == ["m1"]  # committed, not held back
        index.upsert([make_doc(id="m2", body="harbour")])
        index.delete(["m1"])
        assert search(reader, "harbour") == ["m2"]
        with pytest.raises(IndexUnavailable, match="locked"):  # kept between the writes
            other.upsert([make_doc(id="x", body="harbour")])
        index.let_go()
        other.upsert([make_doc(id="m3", body="harbour")])  # free once let go
        index.upsert([make_doc(id="m4", body="harbour")])  # taken again by the next write
        with pytest.raises(IndexUnavailable, match="locked"):
            other.upsert([make_doc(id="x", body="harbour")])

    other.upsert([make_doc(id="m5", body="harbour")])  # leaving the block let it go
    assert search(reader, "harbour", limit=10) == ["m2", "m3", "m4", "m5"]


def test_a_kept_tantivy_writer_that_fails_is_released_and_its_write_lost(
    tmp_path: Path,
) -> None:
    index = TantivyIndex(tmp_path / "fts")
    other = TantivyIndex(tmp_path / "fts", lock_timeout_s=0)

    with index.kept():
        index.upsert([make_doc(id="m1", body="harbour")])
        with pytest.raises(RuntimeError), index._writer(1) as writer:
            writer.add_document(to_document(make_doc(id="lost", body="harbour")))
            raise RuntimeError("the batch died")
        other.upsert([make_doc(id="m2", body="harbour")])  # the failed writer was released
        index.upsert([make_doc(id="m3", body="harbour")])  # and the next write takes one

    assert search(other, "harbour", limit=10) == ["m1", "m2", "m3"]


def test_another_thread_does_not_write_with_a_kept_writer(tmp_path: Path) -> None:
    index = TantivyIndex(tmp_path / "fts", lock_timeout_s=0)

    with index.kept():
        index.upsert([make_doc(id="kept", body="harbour")])
        failures = write_from_another_thread(index)
        index.upsert([make_doc(id="kept-2", body="harbour")])  # still kept

    assert len(failures) == 1 and "locked" in str(failures[0])
    assert search(index, "harbour") == ["kept", "kept-2"]


# -- statistics over the visible projects -----------------------------------------


def scores(index: Any, text: str, where: Filter, prefix: bool) -> list[tuple[str, float]]:
    return [(c.id, c.score) for c in index.search(text, where=where, limit=10, prefix=prefix)]


@pytest.mark.parametrize("prefix", [False, True], ids=["words", "palette"])
def test_no_score_depends_on_text_outside_the_projects_searched(index: Any, prefix: bool) -> None:
    """A token bound to one project could plant a memory holding a word, search
    for it, and read from its score whether another (sealed) project's memories
    hold that word too: BM25's document counts, frequencies and mean length are
    counted over the projects the search may see alone, as-you-type too (the
    console's Search and palette)."""
    index.upsert(
        [
            make_doc(id="a1", project="alpha", body="the glacier migration runbook"),
            make_doc(id="a2", project="alpha", body="deploy notes for the billing service"),
            make_doc(id="g1", project=None, body="glacier storage is cold"),
        ]
    )
    alpha = Filter(projects=("alpha",), include_global=True)
    before = scores(index, "glacier migration", alpha, prefix)
    assert [i for i, _ in before] == ["a1", "g1"]

    index.upsert(
        [make_doc(id=f"s{n}", project="sealed", body=f"glacier secret {n}") for n in range(6)]
        + [make_doc(id="s-long", project="sealed", body="word " * 300)]
    )

    after = scores(index, "glacier migration", alpha, prefix)
    assert [i for i, _ in after] == [i for i, _ in before]
    assert [s for _, s in after] == pytest.approx([s for _, s in before], rel=1e-6)
    everything = scores(index, "glacier migration", EVERYTHING, prefix)
    assert dict(everything)["a1"] != pytest.approx(dict(after)["a1"], rel=1e-6)


def test_a_prefix_expands_over_the_projects_searched_alone(index: Any) -> None:
    """Ten words of a project the caller cannot see crowded its own out of the last
    word's expansions: the palette said "no memory matches" (a security review), and
    told a login that hidden projects hold words with that prefix."""
    index.upsert([make_doc(id="mine", project="alpha", body="zqxalpha marker")])
    alpha = Filter(projects=("alpha",), include_global=True)
    before = [(c.id, c.score) for c in index.search("zqx", where=alpha, limit=10, prefix=True)]
    assert [i for i, _ in before] == ["mine"]

    hidden = " ".join(f"zqxc{i}" for i in range(12))
    index.upsert([make_doc(id=f"c{n}", project="conf", body=hidden) for n in range(3)])

    after = [(c.id, c.score) for c in index.search("zqx", where=alpha, limit=10, prefix=True)]
    assert [i for i, _ in after] == ["mine"]
    assert [s for _, s in after] == pytest.approx([s for _, s in before], rel=1e-6)


def test_a_short_texts_snippet_is_the_whole_text_punctuation_and_links_included(
    index: Any,
) -> None:
    """tantivy's fragment ended at the last word it scored: "... see
    [[idempotency-keys" (the link's brackets and the full stop cut off), where the
    PostgreSQL plane showed the text whole."""
    body = "Store the event id before acting; see [[idempotency-keys]]."
    index.upsert([make_doc(body=body)])

    (hit,) = index.search("idempotency", where=EVERYTHING, limit=1, snippets=True)

    assert hit.snippet is not None
    assert hit.snippet.replace("\x01", "").replace("\x02", "") == body
