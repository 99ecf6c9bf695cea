"""Long memories read as passages (recall/passages.py, recall/context.py `by_passages`)."""

from __future__ import annotations

import numpy as np
import pytest

from recall import passages
from recall.channels.semantic import Semantic
from recall.config import RecallConfig
from recall.context import rescore
from recall.planes import Planes
from recall.testing import InMemoryStore, InMemoryTextIndex, InMemoryVectorIndex
from recall.types import Candidate, ChannelQuery, Context, Doc, Filter, VectorRow
from tests.recall.conftest import make_memory, uid

ALPHA = Filter(projects=("alpha",))
Q = np.array([1.0, 0.0, 0.0], dtype=np.float32)
LONG = " ".join(
    f"Sentence {n} of the runbook says the worker {w} restarts after a crash."
    for n, w in enumerate(["alpha", "beta", "gamma", "delta", "eps", "zeta"], 1)
)  # 6 sentences, 72 words


def doc(body: str, *, item: str = "memory", title: str = "Worker runbook") -> Doc:
    return Doc(id="m1", item=item, project="alpha", active=True, kind="runbook",
               name="worker-runbook", title=title, description="", body=body)  # fmt: skip


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (  # a fragment joins the sentence before it; an abbreviation never ends one
            "The cache is cold. See Fig. 2 for why. It warms in 5 min! Does it? Yes.",
            ["The cache is cold.", "See Fig. 2 for why.", "It warms in 5 min! Does it? Yes."],
        ),
        (
            "Dr. Okafor and Prof. Lindqvist agreed. As shown in Fig. 7, p99 fell to 9.5 ms. "
            "E.g. this works, i.e. fine. The U.S. team and J. Smith signed it.",
            [
                "Dr. Okafor and Prof. Lindqvist agreed.",
                "As shown in Fig. 7, p99 fell to 9.5 ms.",
                "E.g. this works, i.e. fine.",
                "The U.S. team and J. Smith signed it.",
            ],
        ),
        (  # CJK stops need no space; each ideograph counts as a word
            "仓库管理员的应急密码保存在保险柜里。第二句话在这里！第三句呢？",
            ["仓库管理员的应急密码保存在保险柜里。", "第二句话在这里！", "第三句呢？"],
        ),
        (  # capitals beyond ASCII start sentences too
            "Первый этап читает заказы. Ärger gibt es dabei nie.",
            ["Первый этап читает заказы.", "Ärger gibt es dabei nie."],
        ),
        (  # a list without full stops: one passage a line; a wrapped line continues
            "Steps to take:\n- check the ledger service health\n- promote the\nreplica now",
            ["Steps to take:", "- check the ledger service health", "- promote the replica now"],
        ),
        (  # a heading starts a passage and names the sentence after it, however short
            "Run it from the host\n# Rollback\nStop the worker first. Then restore.\n## Checks\n"
            "```\nmake check\n```",
            [
                "Run it from the host",
                "# Rollback Stop the worker first. Then restore.",
                "## Checks",
                "``` make check ```",
            ],
        ),
        ("no stop at all, just words", ["no stop at all, just words"]),
        ("  ", []),
    ],
)
def test_sentences(text: str, expected: list[str]) -> None:
    assert passages.sentences(text) == expected


def test_a_text_of_many_sentences_is_read_in_runs():
    many = [f"This is sentence number {n}." for n in range(400)]
    assert len(passages.sentences(" ".join(many))) == 400
    runs = passages.passages_of(" ".join(many))  # 400 in 192 runs: 16 of three, 176 of two
    assert len(runs) == passages.MAX_PASSAGES and " ".join(runs) == " ".join(many)
    assert runs[0] == " ".join(many[:3]) and runs[-1] == " ".join(many[-2:])
    assert passages.size("仓库管理员的应急密码") == 10


def test_only_long_memories_of_two_sentences_or_more_get_passages():
    texts = passages.texts(doc(LONG))
    assert len(texts) == 6
    first = "Sentence 1 of the runbook says the worker alpha restarts after a crash."
    assert texts[0] == f"Worker runbook\n{first}"
    assert passages.texts(doc("Short. Two sentences only.")) == []  # under MIN_WORDS
    assert passages.texts(doc(" ".join(["word"] * 80))) == []  # one sentence
    assert passages.texts(doc(LONG, item="note")) == []
    # The hash names the model and every text: a new model or an edit embeds again.
    h = passages.texts_hash("m", texts)
    assert h == passages.texts_hash("m", list(texts))
    assert h != passages.texts_hash("other", texts)
    assert h != passages.texts_hash("m", texts[:-1])


def test_best_is_each_memorys_best_sentence_cosine():
    stored = {
        "a": passages.unit_rows(np.array([[0.0, 1, 0], [1, 1, 0]], dtype=np.float32)),
        "b": passages.unit_rows(np.array([[0.0, 0, 1]], dtype=np.float32)),
        "c": np.zeros((2, 4), dtype=np.float32),  # another model's width: ignored
    }
    got = passages.best(Q, stored)
    assert set(got) == {"a", "b"}
    assert got["a"] == pytest.approx(1 / np.sqrt(2))
    assert got["b"] == pytest.approx(0.0)
    assert passages.best(np.zeros(3, dtype=np.float32), stored) == {}


def test_a_long_memory_whose_sentence_names_the_query_climbs_by_hand():
    # m1's one vector is vague (cosine 0.3) but one sentence answers (cosine 1);
    # m2 is closer as a whole (0.5) and has no sentences: it keeps its cosine.
    store = InMemoryStore([make_memory(1), make_memory(2)])
    store.sentences[uid(1)] = passages.unit_rows(np.array([[0.0, 1, 0], [1, 0, 0]]))
    found = [Candidate(uid(2), 1, 0.5), Candidate(uid(1), 2, 0.3)]

    got = rescore(found, Q, store=store, vectors=InMemoryVectorIndex(), where=ALPHA,
                  context=Context(0.0, 2, 50, 0.5))  # fmt: skip

    assert [(c.id, c.rank) for c in got] == [(uid(1), 1), (uid(2), 2)]
    assert got[0].score == pytest.approx(0.5 * 0.3 + 0.5 * 1.0)
    assert got[1].score == pytest.approx(0.5)
    off = rescore(found, Q, store=store, vectors=InMemoryVectorIndex(), where=ALPHA,
                  context=Context(0.0, 2, 50, 0.0))  # fmt: skip
    assert off == found
    with pytest.raises(ValueError, match="passage_mix"):
        RecallConfig(passage_mix=-0.1)


def test_the_semantic_channel_reads_passages_without_turns():
    records = [make_memory(1), make_memory(2)]
    store = InMemoryStore(records)
    plane = InMemoryVectorIndex()
    plane.upsert([
        VectorRow(id=r.id, item="memory", project=r.project, active=r.active, kind=r.kind,
                  vector=tuple(v), model="test")
        for r, v in zip(records, ([0.3, 0.954, 0], [0.5, 0, 0.866]), strict=True)
    ])  # fmt: skip
    store.sentences[uid(1)] = passages.unit_rows(np.array([[1.0, 0, 0]]))
    channel = Semantic(Planes(text=InMemoryTextIndex(), store=store, vectors=plane))

    plain = channel.candidates(ChannelQuery("q", vector=Q), ALPHA, 2, ())
    read = channel.candidates(
        ChannelQuery("q", vector=Q, context=Context(0.0, 2, 50, 0.5)), ALPHA, 2, ()
    )

    assert [c.id for c in plain] == [uid(2), uid(1)]
    assert [c.id for c in read] == [uid(1), uid(2)]


def test_a_fenced_code_block_is_one_passage_of_its_own() -> None:
    text = (
        "Widget config reference.\n```yaml\nwidget_a: 1  # first. knob\nwidget_b: 2\n```\n"
        "that is all for today.\nThen restart the widget service."
    )

    assert passages.sentences(text) == [
        "Widget config reference.",
        "```yaml widget_a: 1 # first. knob widget_b: 2 ```",
        "that is all for today.",  # lower case, but nothing joins onto a closed block
        "Then restart the widget service.",
    ]


def test_a_long_text_of_wrapped_lines_is_one_sentence_read_whole() -> None:
    # Lower-case lines join the sentence before them; a 20,000-line log of them took
    # 284 s when each join rescanned the sentence so far (0.1 s now, one pass).
    lines = [f"line {n} of the worker log" for n in range(3000)]
    found = passages.sentences("The nightly job logged this.\n" + "\n".join(lines))

    assert found == [f"The nightly job logged this. {' '.join(lines)}"]


def test_the_sentence_holding_a_rare_query_term_is_nearest_though_meaning_ties():
    # A runbook of alike steps: the model cannot tell step 1234 from step 112, so the
    # pack showed step 112 to "what log file does step 1234 write".
    steps = [f"Step {n} writes its output to the log file out-{n}.log on disk." for n in
             (112, 113, 1234, 1235)]  # fmt: skip
    text = " ".join(steps)
    found = passages.passages_of(text)
    assert found == steps
    stored = np.array([[1.0, 0.0], [0.9, 0.1], [0.8, 0.2], [0.8, 0.2]], dtype=np.float32)
    query = np.array([1.0, 0.0], dtype=np.float32)

    by_meaning = passages.nearest(text, stored, query)
    asked = passages.nearest(text, stored, query, ["what", "log", "file", "step", "1234"])

    assert by_meaning == steps[0]
    assert asked == steps[2]  # "1234" is held by one sentence; "log", "step" by all
    assert passages.lexical(found, ["log", "step"]).tolist() == [0.0] * 4


def test_a_rare_term_late_in_a_long_run_still_counts():
    # A text of more than 192 sentences is read in runs; a run's words past the
    # query's 32-word cap were not looked at.
    filler = " ".join(f"w{n}" for n in range(40))
    found = [f"Alpha {filler} step 1234 here.", f"Alpha {filler} step 112 here."]

    assert passages.lexical(found, ["1234", "alpha"]).tolist() == [1.0, 0.0]


def test_of_a_run_the_sentence_holding_the_query_words_is_nearest():
    # Past 192 sentences a passage is a run of neighbours; a pack that had to cut the
    # run showed its first sentence, not the one that answered (budget 150: "page
    # the on-call ..." instead of the bucket's name).
    filler = [f"Check {n} looks at the dashboard for the ledger queue." for n in range(383)]
    fact = "The ledger cold-storage bucket is named glacier-billing-zq81."
    text = " ".join([*filler, fact])
    found = passages.passages_of(text)
    assert len(found) == passages.MAX_PASSAGES and found[-1].endswith(fact)
    stored = np.zeros((len(found), 2), dtype=np.float32)
    stored[-1] = [1.0, 0.0]  # the last run is nearest in meaning
    query = np.array([1.0, 0.0], dtype=np.float32)

    asked = passages.nearest(text, stored, query, ["ledger", "bucket", "name", "cold"])

    assert asked == fact
    assert passages.nearest(text, stored, query, ["ledger"]) == found[-1]  # no word tells
