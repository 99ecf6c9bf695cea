from __future__ import annotations

import math
import threading
import time
from dataclasses import replace
from datetime import timedelta

import pytest

from recall.config import MIN_TEXT_BUDGET, PromptConfig
from recall.errors import QueryError
from recall.prompt import PAUSE_EVERY, CorpusCache, build_corpus, match, refresh, terms
from recall.requests import PromptRequest
from recall.testing import InMemoryStore
from recall.tokens import estimate_tokens
from recall.types import Named, Record
from tests.recall.conftest import NOW, MakeEngine, index, make_memory, uid

# IDF needs a corpus: eight unrelated memories, as any real project has.
FILLERS = [
    make_memory(200 + i, word, description=f"{word} notes")
    for i, word in enumerate(
        ["apple", "banana", "cherry", "damson", "elder", "fig", "grape", "hazel"]
    )
]


def rows(records: list[Record]) -> list[Named]:
    """What `MemoryStore.names` reads for these records."""
    return [Named(r.id, r.name, r.description, r.updated) for r in records]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Fix the chroma-boot race", {"fix", "chroma", "boot", "race"}),
        ("a an to of it", set()),
        ("THE Deploy deploys deployed", {"deploi"}),  # Porter stems: one word
        ("migrations migration", {"migrat"}),
        ("v2 api_key 42", {"api", "kei"}),
        # Written without spaces: pairs of characters, a lone one itself.
        ("部件服务 猫 deploy", {"部件", "件服", "服务", "猫", "deploi"}),
        ("テスト", {"テス", "スト"}),
        ("Hermès Straße hermes", {"herm", "strass"}),  # accents off, as the planes fold
    ],
)
def test_terms(text: str, expected: set[str]):
    assert terms(text) == expected


def test_score_is_idf_over_shared_words_over_sqrt_length():
    a = make_memory(1, "chroma-boot-race", description="startup ordering")
    b = make_memory(2, "chroma-docs", description="documentation")
    corpus = build_corpus(rows([a, b, *FILLERS]))

    found = match(corpus, "the chroma boot fails", PromptConfig())

    # N = 10; a shares {chroma (df 2), boot (df 1)} and has 5 words
    # (chroma, boot, race, startup, ordering); b shares one word only.
    assert found == [
        (a.id, pytest.approx((math.log(1 + 10 / 2) + math.log(1 + 10 / 1)) / math.sqrt(5)))
    ]


def test_floors_need_two_shared_words_and_a_score():
    corpus = build_corpus(rows([make_memory(1, "chroma", description="boot"), *FILLERS]))

    assert match(corpus, "chroma only", PromptConfig()) == []
    assert match(corpus, "chroma boot", PromptConfig(min_score=100)) == []
    assert len(match(corpus, "chroma boot", PromptConfig())) == 1


def test_a_word_matches_its_other_forms():
    # "…pulled migrations" surfaced the memory saying "migrations" and not its
    # sibling saying "migration": words were compared as written.
    plural = make_memory(1, "reset-after-pull", description="rerun migrations after a pull")
    single = make_memory(2, "stale-schema", description="a pulled migration leaves it stale")
    corpus = build_corpus(rows([plural, single, *FILLERS]))

    found = [i for i, _ in match(corpus, "I pulled and my migrations fail", PromptConfig())]

    assert set(found) == {plural.id, single.id}


def test_a_chinese_prompt_finds_a_chinese_memory(make_engine: MakeEngine):
    """A run of ideographs was one word, shared only when the prompt held it whole."""
    widget = make_memory(1, "widget-zh", description="部件服务的中文说明")
    engine = make_engine([widget, *FILLERS])

    assert engine.prompt_recall(PromptRequest("alpha", "部件服务怎么部署？")).ids == (uid(1),)
    assert engine.prompt_recall(PromptRequest("alpha", "今天午饭吃什么")).ids == ()


def test_matches_a_budget_holds_none_of_say_so(make_engine: MakeEngine):
    # The block came back "" with no word, as if nothing had matched.
    deploys = [make_memory(1, "deploy-rollback", description="deploy rollback steps")]
    engine = make_engine([*deploys, *FILLERS])
    asked = PromptRequest("alpha", "how do I deploy a rollback", budget=30)

    tight = engine.prompt_recall(asked)
    roomy = engine.prompt_recall(replace(asked, budget=300))
    missed = engine.prompt_recall(PromptRequest("alpha", "what is for lunch", budget=30))

    assert (tight.text, tight.ids) == ("", ())
    assert tight.warnings == (
        "1 memory matched, but its line does not fit 30 tokens: ask with a larger budget",
    )
    assert roomy.ids == (uid(1),) and not roomy.warnings
    assert missed.warnings == ()  # nothing matched: nothing to say


def test_at_most_three_hits(make_engine: MakeEngine):
    deploys = [
        make_memory(i, f"deploy-rollback-{i}", description="deploy rollback") for i in range(1, 7)
    ]
    engine = make_engine([*deploys, *FILLERS])

    result = engine.prompt_recall(PromptRequest("alpha", "how do I deploy a rollback"))

    assert len(result.ids) == 3
    assert result.text.startswith("<memory-recall>") and result.text.endswith("</memory-recall>")


def test_nothing_clearing_the_floors_is_empty(make_engine: MakeEngine):
    engine = make_engine([make_memory(1, "chroma-boot-race", description="startup"), *FILLERS])

    assert engine.prompt_recall(PromptRequest("alpha", "chroma boot race")).ids == (uid(1),)
    assert engine.prompt_recall(PromptRequest("alpha", "what is for lunch today")).text == ""
    assert engine.prompt_recall(PromptRequest("alpha", "   ")).ids == ()


def test_prompt_recall_is_scoped_and_live_only(make_engine: MakeEngine):
    engine = make_engine(
        [
            make_memory(1, "chroma-boot-race", description="startup ordering", project="beta"),
            make_memory(
                2, "chroma-boot-race", description="startup ordering", project=None, active=False
            ),
        ]
    )

    assert engine.prompt_recall(PromptRequest("alpha", "chroma boot race at startup")).text == ""


def test_a_global_memorys_line_in_a_projects_block_says_it_is_global(make_engine: MakeEngine):
    # The briefing said "[global constraint, 1y]"; the same memory matched by a prompt
    # read "[constraint]", as though the project's own (an agent may not change it).
    engine = make_engine(
        [
            make_memory(1, "deploy-freeze-fridays", description="no deploys friday afternoon",
                        project=None, kind="constraint"),
            make_memory(2, "chroma-boot-race", description="startup ordering"),
            *FILLERS,
        ]
    )  # fmt: skip

    shared = engine.prompt_recall(PromptRequest("alpha", "can we deploy on friday afternoon"))
    own = engine.prompt_recall(PromptRequest("alpha", "the chroma boot race at startup"))

    assert "- deploy-freeze-fridays [global constraint]: " in shared.text, shared.text
    assert "- chroma-boot-race [fact]: " in own.text, own.text


def test_a_cached_corpus_shows_its_matches_as_the_store_has_them_now(
    make_engine: MakeEngine,
):
    race = make_memory(1, "chroma-boot-race", description="startup ordering")
    engine = make_engine([race, *FILLERS])
    ask = PromptRequest("alpha", "chroma boot race at startup")
    assert engine.prompt_recall(ask).ids == (uid(1),)

    store = engine.planes.store
    assert isinstance(store, InMemoryStore)
    store.add(replace(race, description="renamed since the corpus was built"))
    assert "renamed since" in engine.prompt_recall(ask).text  # the corpus is still cached
    store.add(replace(race, active=False))  # archived
    assert engine.prompt_recall(ask).text == ""


def test_corpus_is_cached_for_the_ttl_then_rebuilt(make_engine: MakeEngine):
    now = [NOW]
    engine = make_engine(FILLERS, clock=lambda: now[0])
    ask = PromptRequest("alpha", "chroma boot race at startup")

    assert engine.prompt_recall(ask).text == ""
    index(engine, [make_memory(1, "chroma-boot-race", description="startup ordering")])
    assert engine.prompt_recall(ask).text == ""  # still the cached corpus
    now[0] += timedelta(seconds=31)
    assert engine.prompt_recall(ask).ids == (uid(1),)  # synchronous rebuild in tests
    assert (engine.corpora.builds, engine.corpora.refreshes) == (1, 1)  # what changed, applied


def test_a_row_dated_ahead_does_not_hide_later_writes_from_a_refresh(make_engine: MakeEngine):
    """A refresh read the rows updated since the newest it had read; one dated a year
    ahead (an import from a fast clock) hid every later write until a whole build."""
    now = [NOW]
    ahead = make_memory(90, "imported-ahead", updated=NOW + timedelta(days=365))
    engine = make_engine([ahead, *FILLERS], clock=lambda: now[0])
    ask = PromptRequest("alpha", "chroma boot race at startup")
    assert engine.prompt_recall(ask).text == ""

    now[0] += timedelta(seconds=31)
    race = make_memory(1, "chroma-boot-race", description="startup ordering", updated=now[0])
    index(engine, [race])

    assert engine.prompt_recall(ask).ids == (uid(1),)
    assert (engine.corpora.builds, engine.corpora.refreshes) == (1, 1)


PROMPTS = ["the chroma boot fails", "deploy a rollback at startup", "grape and fig notes"]


def test_a_refreshed_corpus_matches_as_one_built_whole_from_the_same_rows():
    old = [make_memory(1, "chroma-boot-race", description="startup ordering"), *FILLERS]
    new = [
        make_memory(2, "chroma-docs", description="boot documentation"),
        make_memory(3, "deploy-rollback", description="deploy rollback at startup"),
    ]

    refreshed = refresh(build_corpus(rows(old)), rows(new))
    whole = build_corpus(rows([*old, *new]))

    assert refreshed.rows == whole.rows == 11
    for prompt in PROMPTS:
        assert match(refreshed, prompt, PromptConfig()) == match(whole, prompt, PromptConfig())
    assert match(refreshed, "chroma boot", PromptConfig())  # it does match something


def test_a_memory_changed_since_is_matched_by_its_new_words_only():
    race = make_memory(1, "chroma-boot-race", description="startup ordering")
    corpus = build_corpus(rows([race, *FILLERS]))
    assert [i for i, _ in match(corpus, "chroma boot race", PromptConfig())] == [uid(1)]
    edited = replace(race, name="lance-merge-stall", description="compaction", updated=NOW)

    refreshed = refresh(corpus, rows([edited]))

    assert match(refreshed, "chroma boot race", PromptConfig()) == []
    assert [i for i, _ in match(refreshed, "lance merge stall", PromptConfig())] == [uid(1)]
    assert (refreshed.rows, refreshed.replaced, refreshed.ids.count("")) == (9, 1, 1)
    assert refreshed.newest == NOW and corpus.newest == race.updated  # the old one untouched
    assert refreshed.fits(8) and not refreshed.fits(7)  # 9 records: past 7 * (1 + GROWTH)
    twice = refresh(refreshed, rows([replace(FILLERS[0], description="new", updated=NOW)]))
    assert not twice.fits(8)  # 2 of 11 positions replaced: past REPLACED, build it whole


def test_rows_read_again_leave_the_corpus_as_it_is():
    corpus = build_corpus(rows(FILLERS))

    assert refresh(corpus, rows(FILLERS[:3])) is corpus
    assert refresh(corpus, []) is corpus


def test_a_stale_corpus_is_refreshed_and_built_whole_when_asked_or_due() -> None:
    now = [NOW]
    cache = CorpusCache(clock=lambda: now[0], background=False, whole_after=timedelta(minutes=5))
    given: list[object] = []

    def build() -> object:
        return build_corpus(rows(FILLERS))

    def renew(corpus: object) -> object:
        given.append(corpus)
        return build_corpus(rows(FILLERS[:2]))

    first = cache.get("k", build, ttl=30, refresh=renew)  # type: ignore[arg-type]
    now[0] += timedelta(seconds=31)
    renewed = cache.get("k", build, ttl=30, refresh=renew)  # type: ignore[arg-type]
    assert given == [first] and (cache.builds, cache.refreshes) == (1, 1)

    cache.expire(whole=True)
    again = cache.get("k", build, ttl=30, refresh=renew)  # type: ignore[arg-type]
    assert again is not renewed and len(again.ids) == 8 and cache.builds == 2

    now[0] += timedelta(minutes=5)  # built whole 5 minutes ago: due again
    cache.get("k", build, ttl=30, refresh=renew)  # type: ignore[arg-type]
    assert (cache.builds, cache.refreshes) == (3, 1) and given == [first]


def test_a_refresh_that_would_read_many_rows_builds_the_corpus_whole(make_engine: MakeEngine):
    now = [NOW]
    engine = make_engine(FILLERS, clock=lambda: now[0])
    config = PromptConfig(corpus_limit=8)  # a refresh reads at most 8 * GROWTH = 2 rows
    ask = PromptRequest("alpha", "chroma boot race at startup")
    engine.prompt_recall(ask, config=config)

    index(engine, [make_memory(i, "chroma-boot-race", description="startup") for i in (1, 2, 3)])
    now[0] += timedelta(seconds=31)

    assert engine.prompt_recall(ask, config=config).ids
    assert (engine.corpora.builds, engine.corpora.refreshes) == (2, 0)


def test_a_write_of_this_process_refreshes_the_corpora_read_before_it() -> None:
    """Within the TTL and whatever the stamp (the index may not have applied the
    write yet), at most once a WRITTEN_GAP."""
    now = [NOW]
    cache = CorpusCache(clock=lambda: now[0], background=False)
    given: list[object] = []

    def renew(corpus: object) -> object:
        given.append(corpus)
        return build_corpus(rows([make_memory(1), *FILLERS]))

    def look() -> object:
        return cache.get(
            "k", lambda: build_corpus(rows(FILLERS)), ttl=30, stamp=("meta", 1), refresh=renew
        )  # type: ignore[arg-type]

    first = look()
    now[0] += timedelta(seconds=2)
    cache.written()
    assert look() is not first and given == [first]  # read before the write: refreshed
    refreshed = look()
    assert given == [first]  # just refreshed: kept
    cache.written()
    now[0] += timedelta(seconds=0.5)
    assert look() is refreshed  # refreshed 0.5 s ago: kept for now
    now[0] += timedelta(seconds=0.5)
    assert look() is not refreshed and len(given) == 2  # a WRITTEN_GAP later: refreshed


def test_the_writers_next_look_refreshes_in_the_request_and_queues_a_build_due() -> None:
    """In the background mode a server runs: a corpus read before this process's own
    write is refreshed by the next look itself (the writer's next prompt sees what it
    wrote, even when the corpus had also outlived its TTL), never built whole there."""
    now = [NOW]
    cache = CorpusCache(clock=lambda: now[0], whole_after=timedelta(minutes=5))
    on: list[str] = []

    def build() -> object:
        on.append(threading.current_thread().name)
        return build_corpus(rows(FILLERS))

    def renew(corpus: object) -> object:
        on.append(threading.current_thread().name)
        return build_corpus(rows([make_memory(1), *FILLERS]))

    def look() -> object:
        return cache.get("k", build, ttl=30, refresh=renew)  # type: ignore[arg-type]

    first = look()
    now[0] += timedelta(seconds=35)  # idle past the TTL, then a write
    cache.written()
    now[0] += timedelta(seconds=2)
    renewed = look()
    assert renewed is not first and len(on) == 2 and on[1] == threading.current_thread().name

    now[0] += timedelta(minutes=5)  # a whole build is due: not in the request
    cache.written()
    now[0] += timedelta(seconds=2)
    assert look() is renewed
    deadline = time.monotonic() + 5
    while cache.builds < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert cache.builds == 2 and on[2] == "prompt-corpora"


def test_stale_corpus_is_served_while_one_background_rebuild_runs():
    import threading

    now = [NOW]
    cache = CorpusCache(clock=lambda: now[0], background=True)
    release = threading.Event()
    calls: list[int] = []

    def slow_build() -> object:
        calls.append(1)
        release.wait(5)
        return build_corpus(rows([make_memory(len(calls))]))

    first = cache.get("k", lambda: build_corpus(rows([])), ttl=30)
    now[0] += timedelta(seconds=60)
    stale_a = cache.get("k", slow_build, ttl=30)  # type: ignore[arg-type]
    stale_b = cache.get("k", slow_build, ttl=30)  # type: ignore[arg-type]
    release.set()
    for _ in range(100):
        if cache.builds == 2:
            break
        threading.Event().wait(0.01)

    assert stale_a is first and stale_b is first
    assert calls == [1]  # single-flight
    assert cache.builds == 2
    assert cache.get("k", slow_build, ttl=30) is not first  # type: ignore[arg-type]


def test_an_expired_corpus_is_rebuilt_on_its_next_look_whatever_its_stamp() -> None:
    now = [NOW]
    cache = CorpusCache(clock=lambda: now[0], background=False)
    first = cache.get("k", lambda: build_corpus([]), ttl=30, stamp=("meta", 1))
    assert cache.get("k", lambda: build_corpus([]), ttl=30, stamp=("meta", 1)) is first

    cache.expire()
    again = cache.get("k", lambda: build_corpus(rows([make_memory(1)])), ttl=30, stamp=("meta", 1))

    assert again is not first and again.ids == (uid(1),) and cache.builds == 2


def test_stale_scopes_are_rebuilt_one_at_a_time_on_one_thread() -> None:
    """A thread per stale scope (13 at once at 100,000 memories under writes) took
    the GIL from the requests: PromptRecall's p99 was 185 ms."""
    import threading

    now = [NOW]
    cache = CorpusCache(clock=lambda: now[0], background=True)
    names: set[str] = set()
    running, most = [0], [0]
    guard = threading.Lock()

    def slow_build() -> object:
        with guard:
            running[0] += 1
            most[0] = max(most[0], running[0])
        names.add(threading.current_thread().name)
        threading.Event().wait(0.02)
        with guard:
            running[0] -= 1
        return build_corpus([])

    for key in "abcd":
        cache.get(key, lambda: build_corpus([]), ttl=30)
    now[0] += timedelta(seconds=60)
    for key in "abcd":
        cache.get(key, slow_build, ttl=30)  # type: ignore[arg-type]
    for _ in range(300):
        if cache.builds == 8:
            break
        threading.Event().wait(0.01)

    assert cache.builds == 8
    assert most[0] == 1 and len(names) == 1
    assert threading.current_thread().name not in names


def test_a_background_rebuild_pauses_every_few_rows_and_a_first_build_does_not() -> None:
    """The rebuilding thread leaves the GIL to requests now and then (else each of
    their database reads waited out its switch interval); a request that builds
    its scope's first corpus does not wait on purpose."""
    import threading

    now = [NOW]
    slept: list[str] = []
    cache = CorpusCache(
        clock=lambda: now[0], background=True,
        sleep=lambda _: slept.append(threading.current_thread().name),
    )  # fmt: skip
    many = rows([make_memory(i) for i in range(1, 2 * PAUSE_EVERY + 1)])

    cache.get("k", lambda: build_corpus(many, pause=cache.pause), ttl=30)
    assert slept == [] and cache.builds == 1
    now[0] += timedelta(seconds=60)
    cache.get("k", lambda: build_corpus(many, pause=cache.pause), ttl=30)
    for _ in range(300):
        if cache.builds == 2:
            break
        threading.Event().wait(0.01)

    assert cache.builds == 2
    assert slept == ["prompt-corpora", "prompt-corpora"]


@pytest.mark.parametrize("fails", [False, True])
def test_each_background_rebuild_thread_ends_with_finished(fails: bool) -> None:
    """The console gives the thread's database connection back there (a pool would
    otherwise lose one connection per rebuild), whether or not the build worked."""
    import threading

    now = [NOW]
    done: list[str] = []
    cache = CorpusCache(
        clock=lambda: now[0], background=True,
        finished=lambda: done.append(threading.current_thread().name),
    )  # fmt: skip
    cache.get("k", lambda: build_corpus(rows([])), ttl=30)
    assert done == []  # a first, synchronous build runs on the caller's thread

    def build() -> object:
        if fails:
            raise RuntimeError("the store is down")
        return build_corpus(rows([make_memory(1)]))

    now[0] += timedelta(seconds=60)
    cache.get("k", build, ttl=30)  # type: ignore[arg-type]
    for _ in range(200):
        if done:
            break
        threading.Event().wait(0.01)

    assert len(done) == 1 and done[0] != threading.current_thread().name


def test_the_block_fits_its_budget_and_reports_its_tokens(make_engine: MakeEngine):
    deploys = [
        make_memory(i, f"deploy-rollback-{i}", description="deploy rollback " * 6)
        for i in range(1, 4)
    ]
    engine = make_engine([*deploys, *FILLERS])
    ask = "how do I deploy a rollback"

    full = engine.prompt_recall(PromptRequest(project="alpha", prompt=ask))
    tight = engine.prompt_recall(PromptRequest(project="alpha", prompt=ask, budget=80))
    none = engine.prompt_recall(PromptRequest(project="alpha", prompt=ask, budget=MIN_TEXT_BUDGET))

    assert len(full.ids) == 3 and full.tokens == engine.planes.tokens.count(full.text)
    assert 0 < len(tight.ids) < 3 and tight.tokens <= 80
    assert tight.text.endswith("</memory-recall>")
    assert (none.text, none.ids, none.tokens) == ("", (), 0)


def test_matches_no_line_of_which_fits_are_one_line_within_the_least_budget(
    make_engine: MakeEngine,
):
    # At a budget of 5 the line saying so ("(1 memory matched, but its line does not
    # fit 5 tokens: ask with a larger budget)") took 20 tokens. Budgets start where the
    # longest such line fits: a hundred matches (max_hits' most).
    deploys = [
        make_memory(i, f"deploy-rollback-{i}", description="deploy rollback " * 6)
        for i in range(1, 101)
    ]
    engine = make_engine([*deploys, *FILLERS])
    config = PromptConfig(max_hits=100, min_score=0)

    def asked(budget: int) -> PromptRequest:
        return PromptRequest(project="alpha", prompt="how do I deploy a rollback", budget=budget)

    none = engine.prompt_recall(asked(MIN_TEXT_BUDGET), config=config)

    (said,) = none.warnings
    assert said.startswith(f"100 memories matched, but no line of them fits {MIN_TEXT_BUDGET} ")
    assert engine.planes.tokens.count(f"({said})") <= MIN_TEXT_BUDGET
    with pytest.raises(QueryError, match=f"at least {MIN_TEXT_BUDGET}, not 21") as e:
        engine.prompt_recall(asked(MIN_TEXT_BUDGET - 1), config=config)
    assert e.value.field == "budget"


def test_a_stale_corpus_whose_index_has_not_moved_is_kept_without_a_rebuild() -> None:
    """The stamp it was built at still holds: fresh again, no build (which reads up to
    corpus_limit rows); once the stamp moves, the next stale look rebuilds."""
    now = [NOW]
    cache = CorpusCache(clock=lambda: now[0], background=False)
    first = cache.get("k", lambda: build_corpus(rows([])), ttl=30, stamp=("meta", 1))

    def build() -> object:
        return build_corpus(rows([make_memory(1)]))

    now[0] += timedelta(seconds=60)
    assert cache.get("k", build, ttl=30, stamp=("meta", 1)) is first  # type: ignore[arg-type]
    assert cache.builds == 1
    now[0] += timedelta(seconds=20)  # 20 s after the refresh: still fresh, whatever the stamp
    assert cache.get("k", build, ttl=30, stamp=("meta", 2)) is first  # type: ignore[arg-type]
    now[0] += timedelta(seconds=20)
    moved = cache.get("k", build, ttl=30, stamp=("meta", 2))  # type: ignore[arg-type]
    assert moved is not first and cache.builds == 2
    now[0] += timedelta(seconds=60)  # no stamp (a plane that cannot tell): rebuilt when stale
    assert cache.get("k", build, ttl=30) is not moved  # type: ignore[arg-type]
    assert cache.builds == 3


def test_matches_the_budget_cut_are_counted_in_a_warning(make_engine: MakeEngine):
    # The block held one of two matches at a small budget and said nothing of the other.
    deploys = [
        make_memory(1, "deploy-rollback", description="deploy rollback steps for the api"),
        make_memory(2, "deploy-rollback-db", description="deploy rollback of the db schema"),
    ]
    engine = make_engine([*deploys, *FILLERS])
    roomy = engine.prompt_recall(PromptRequest("alpha", "how do I deploy a rollback"))
    assert len(roomy.ids) == 2 and not roomy.warnings

    cut = engine.prompt_recall(
        PromptRequest("alpha", "how do I deploy a rollback", budget=estimate_tokens(roomy.text) - 1)
    )

    assert cut.ids == roomy.ids[:1]
    assert cut.warnings == (
        f"1 of the 2 matched memories did not fit {estimate_tokens(roomy.text) - 1} tokens: "
        "ask with a larger budget",
    )
    # The block says so too, within the budget: a hook injects the text alone.
    assert "\n(+1 more matched: ask with a larger budget)\n</memory-recall>" in cut.text
    assert cut.tokens == estimate_tokens(cut.text) <= estimate_tokens(roomy.text) - 1


def test_a_budget_that_holds_one_line_and_the_short_last_line_shows_the_line(
    make_engine: MakeEngine,
):
    # An agent walk: at 50 tokens "2 memories matched, but no line of them fits", though
    # the wrapper and one line took 43: room was kept for the long last line only.
    deploys = [
        make_memory(1, "deploy-rollback", description="deploy rollback steps for the api"),
        make_memory(2, "deploy-rollback-db", description="deploy rollback of the db schema"),
    ]
    engine = make_engine([*deploys, *FILLERS])
    ask = "how do I deploy a rollback"
    roomy = engine.prompt_recall(PromptRequest("alpha", ask))
    first = roomy.text.split("\n")[2]
    one = roomy.text.replace(f"\n{roomy.text.split(chr(10))[3]}", "\n(+1 more matched)")
    assert first in one and estimate_tokens(one) < estimate_tokens(roomy.text)

    cut = engine.prompt_recall(PromptRequest("alpha", ask, budget=estimate_tokens(one)))

    assert cut.text == one and cut.ids == roomy.ids[:1], cut
    assert cut.tokens <= estimate_tokens(one)
