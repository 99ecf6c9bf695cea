"""A synthetic corpus the project generates itself, in our import format.

Realistic shapes without anyone's data: projects (plus some global
memories), the memory kinds in plausible proportions, names that are slugs,
descriptions of 6-20 words (<= 150 characters), bodies of lognormal length
(median about 60 words, long tail to 600), `[[name]]` links to earlier
memories of the same project, about 10% superseded (each replaced by a newer
memory that names the old one), and a share of episodic memories in ordered
sessions. Words come from a technical vocabulary plus a long tail of made-up
words drawn with Zipf-like frequencies, so BM25 sees common and rare terms.
Deterministic for a seed.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import accumulate
from pathlib import Path
from typing import Any

COMMON = """
the a to of and in is for on with that this it be as by are or not from at we when
use run fails after before every should must never always only if then but so
deploy build test cache retry timeout queue worker database index migration schema
token auth login session cookie header request response client server api endpoint
config setting flag env secret key rotate backup restore snapshot replica shard lock
latency throughput memory disk cpu thread process container pod node cluster region
bucket object upload download stream batch job cron schedule alert metric log trace
error exception crash panic leak race deadlock bug fix patch release version tag branch
merge review rollback canary feature user team owner customer billing invoice payment
refund price plan quota limit rate burst spike outage incident postmortem runbook
service gateway proxy dns tls certificate expiry renewal vault kafka redis postgres
sqlite lance tantivy embedding vector search ranking fusion recall briefing prompt
""".split()  # noqa: SIM905 (a word list reads better as text)
KINDS = (
    ("fact", 24), ("decision", 12), ("gotcha", 10), ("convention", 9), ("runbook", 7),
    ("constraint", 6), ("reference", 8), ("preference", 6), ("protocol", 4), ("refuted", 3),
    ("stage", 3), ("working", 3),
)  # fmt: skip
ONSETS = ("b", "c", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "st", "tr")
VOWELS = ("a", "e", "i", "o", "u", "ai", "ou", "ea")
CODAS = ("", "n", "r", "s", "t", "l", "x", "nd", "rk")
BASE_TIME = datetime(2025, 1, 1, tzinfo=UTC)
SPAN_AT = 10_000  # corpus size whose timestamps span the longest time (about a year)
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _made_up(rng: random.Random) -> str:
    syllables = rng.randint(2, 3)
    return "".join(rng.choice(ONSETS) + rng.choice(VOWELS) for _ in range(syllables)) + (
        rng.choice(CODAS)
    )


@dataclass
class Vocabulary:
    words: list[str]
    cumulative: list[float]

    @classmethod
    def build(cls, rng: random.Random, tail: int = 6000) -> Vocabulary:
        made = sorted({_made_up(rng) for _ in range(tail)} - set(COMMON))
        rng.shuffle(made)
        words = COMMON + made
        cumulative = list(accumulate(1.0 / (rank + 8) for rank in range(len(words))))
        return cls(words, cumulative)

    def sample(self, rng: random.Random, n: int) -> list[str]:
        return rng.choices(self.words, cum_weights=self.cumulative, k=n)


@dataclass
class Corpus:
    """The generated records and what the benchmarks need to query them."""

    records: list[dict[str, Any]] = field(default_factory=list)
    projects: list[str] = field(default_factory=list)
    vocabulary: list[str] = field(default_factory=list)

    @property
    def memories(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r["type"] == "memory"]

    def write(self, path: Path) -> Path:
        with path.open("w", encoding="utf-8") as fh:
            for record in self.records:
                fh.write(json.dumps(record) + "\n")
        return path


def ulid(rng: random.Random, when: datetime) -> str:
    """A ULID-shaped id (time-ordered prefix, random tail) from the seeded generator."""
    millis = int(when.timestamp() * 1000)
    head = "".join(CROCKFORD[(millis >> (5 * i)) & 31] for i in reversed(range(10)))
    return head + "".join(rng.choice(CROCKFORD) for _ in range(16))


def _sentence(vocab: Vocabulary, rng: random.Random, n: int) -> str:
    return " ".join(vocab.sample(rng, n))


def _body_words(rng: random.Random) -> int:
    return max(12, min(600, int(rng.lognormvariate(4.1, 0.7))))


def generate(size: int, *, projects: int = 8, seed: int = 7) -> Corpus:
    """`size` memories (10% of them superseded) across `projects` projects + global."""
    rng = random.Random(seed)
    vocab = Vocabulary.build(rng)
    corpus = Corpus(projects=[f"proj-{i}" for i in range(projects)], vocabulary=vocab.words)
    for slug in corpus.projects:
        corpus.records.append({"type": "project", "slug": slug, "name": slug.title()})
    names: dict[str | None, list[str]] = {}
    kinds, kind_weights = zip(*KINDS, strict=True)
    when = BASE_TIME
    # Steps of up to an hour span 1.2 years at 10,000 memories; past SPAN_AT they shrink,
    # so no corpus reaches the future (at 100,000 it ran to 2030, and PromptRecall's
    # corpora, the newest names first, then never held a write made today).
    scale = min(1.0, SPAN_AT / size) if size else 1.0
    for memory in _memories(size, rng, vocab, corpus.projects, names, kinds, kind_weights):
        when += timedelta(seconds=rng.randint(30, 3600) * scale)
        memory["created"] = when.isoformat()
        memory["id"] = ulid(rng, when)
        corpus.records.append(memory)
    _supersede(corpus, rng)
    return corpus


def _memories(
    size: int,
    rng: random.Random,
    vocab: Vocabulary,
    projects: list[str],
    names: dict[str | None, list[str]],
    kinds: tuple[str, ...],
    kind_weights: tuple[int, ...],
) -> Iterator[dict[str, Any]]:
    made = 0
    session = 0
    while made < size:
        project: str | None = rng.choice(projects) if rng.random() > 0.05 else None
        if rng.random() < 0.015:  # an episodic session of several turns
            session += 1
            turns = min(rng.randint(5, 15), size - made)
            for turn in range(turns):
                yield _memory(rng, vocab, project, names, "episode", session=(session, turn))
            made += turns
            continue
        kind = rng.choices(kinds, weights=kind_weights)[0]
        yield _memory(rng, vocab, project, names, kind)
        made += 1


def _memory(
    rng: random.Random,
    vocab: Vocabulary,
    project: str | None,
    names: dict[str | None, list[str]],
    kind: str,
    session: tuple[int, int] | None = None,
) -> dict[str, Any]:
    taken = names.setdefault(project, [])
    name = "-".join(vocab.sample(rng, rng.randint(2, 4))) + f"-{len(taken)}"
    description = _sentence(vocab, rng, rng.randint(6, 20))[:150].rsplit(" ", 1)[0]
    body = _sentence(vocab, rng, _body_words(rng))
    if taken and rng.random() < 0.3:
        links = rng.sample(taken[-200:], min(len(taken[-200:]), rng.randint(1, 2)))
        body += " see " + " and ".join(f"[[{target}]]" for target in links)
    taken.append(name)
    record: dict[str, Any] = {
        "type": "memory",
        "project": project,
        "kind": kind,
        "name": name,
        "description": description,
        "body": body,
        "tags": vocab.sample(rng, rng.randint(0, 3)),
    }
    if session is not None:
        record["session_id"] = f"{project or 'global'}:S{session[0]}"
        record["session_order"] = session[1]
    return record


def _supersede(corpus: Corpus, rng: random.Random) -> None:
    """Mark 10% of the memories superseded by the next memory of their project."""
    following: dict[int, dict[str, Any]] = {}
    last: dict[str | None, int] = {}
    memories = corpus.memories
    for i, m in enumerate(memories):
        if m["project"] in last:
            following[last[m["project"]]] = m
        last[m["project"]] = i
    for i in rng.sample(sorted(following), min(len(following), len(memories) // 10)):
        memories[i]["superseded_by"] = following[i]["id"]
        memories[i]["invalid_at"] = following[i]["created"]


def keystrokes(corpus: Corpus, letters: int, n: int, seed: int = 11) -> list[str]:
    """`n` palette queries whose (only) word is `letters` letters typed so far."""
    rng = random.Random(seed + letters)
    words = [w for w in corpus.vocabulary if len(w) > letters]
    return [rng.choice(words)[:letters] for _ in range(n)]


def queries(corpus: Corpus, n: int, *, seed: int = 13) -> list[tuple[str, str | None]]:
    """`n` distinct (query, project) pairs: 3-7 words taken from a memory of the project."""
    rng = random.Random(seed)
    memories = corpus.memories
    out: dict[str, str | None] = {}
    while len(out) < n:
        m = rng.choice(memories)
        text = (m["description"] + " " + m["body"]).split()
        start = rng.randrange(max(1, len(text) - 7))
        words = [w for w in text[start : start + rng.randint(3, 7)] if "[[" not in w]
        if len(words) >= 2:
            out.setdefault(" ".join(words), m["project"] or rng.choice(corpus.projects))
    return list(out.items())
