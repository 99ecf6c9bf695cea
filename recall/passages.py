"""Long memories read as passages: the meaning of the one sentence a question names.

One vector of a memory's first 128 word pieces blurs a long text that holds
many facts (a session summary, an abstract, a runbook): a question names one
of them. So a long memory also keeps one vector per sentence (`texts`: each
sentence after the memory's title, embedded by the index worker beside the
memory's own vector and stored with the hash of what was embedded, so a
reindex copies them), and the semantic channel scores its top `pool`
candidates (`recall.context.rescore`)

    score = (1 - mix) * cos(q, memory) + mix * max over its sentences cos(q, sentence)

A memory without sentence vectors (short, one sentence, or not embedded yet)
keeps its cosine. A text of more than `MAX_PASSAGES` sentences is read in that
many runs of neighbouring sentences (`passages_of`). A pack that must cut a
long memory keeps the passage nearest the query after a shorter head
(`focus`, recall/packing.py). Only memories of at least `MIN_WORDS` words in two or more
sentences get them: a chat turn or a one-line fact reads well as one vector,
and their writes stay one embedding each.

Chosen on the development sets (`manage.py bench quality`, README "Retrieval"):
fused default R@10 / nDCG@10 without -> with, LoCoMo summaries 0.864 / 0.701
-> 0.878 / 0.720, SciFact train 0.846 / 0.730 -> 0.855 / 0.740 (mix 0.3 and
0.7 a little lower), LoCoMo turns 0.810 / 0.614 -> 0.811 / 0.615 (a fifth of
them are long enough), observations unchanged (none is). Offline, the best
128-piece window instead of sentences gained a third as much, the mean of the
sentence vectors lost. The cost is at write time: the index worker embeds
every sentence of a long memory, about four times its one vector's work.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from recall.markdown import closes, fence
from recall.ports import MemoryStore, Vector, Vectors
from recall.query import WORD, fold, words
from recall.types import MEMORY, Doc, Record, embeddable, fingerprint

MIN_WORDS = 60  # what reads well as one vector (about 80 word pieces of the 128 embedded)
MAX_PASSAGES = 192  # a text of more sentences is read in 192 runs of neighbouring ones
# (SciFact's abstracts: 19 sentences at p99; a 2,000-sentence log: runs of about
# 10), so its end is read too and a write's embedding work stays bounded.
MIN_SENTENCE_WORDS = 4  # a shorter fragment ("Yes.", "Does it?") joins the one before it

# Where a sentence may end: . ! ? or … and a space; a CJK stop (no space needed); a line
# break. `sentences` then joins back what was not an end (see there).
_TERM = re.compile(WORD)  # a sentence's words as the query's are read (`recall.query.words`)
_END = re.compile(r"(?<=[.!?…])\s+|(?<=[。！？；])|\s*\n\s*")
# A part ending in one of these did not end its sentence ("Dr. Okafor", "Fig. 7").
_ABBREVIATION = re.compile(
    r"(?:^|[\s(])(?:[A-Z]|Dr|Prof|Mr|Mrs|Ms|Mx|Jr|Sr|St|Mt|Fig|Figs|Eq|Eqs|No|Nos|Vol|Ch"
    r"|Sec|Ref|Refs|Tab|vs|etc|approx|al|cf|ca|[eE]\.g|[iI]\.e|U\.S|U\.K|E\.U|Inc|Ltd|Co|Corp"
    r"|Dept|Univ|p|pp)\.$"
)
_ITEM = re.compile(r"(?:[-*+•]|\d+[.)])\s")  # a list item starts a passage, however short
_HEADING = re.compile(r"#{1,6}\s")  # a markdown heading starts one, and names the part after it


def _ideographic(ch: str) -> bool:
    return "\u3040" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af" or "\uf900" <= ch <= "\ufaff"


def size(text: str) -> int:
    """About how many words `text` holds: its words between spaces, each kana, CJK
    ideograph and hangul syllable counted as one (those texts need no spaces)."""
    ideographs = sum(1 for ch in text if _ideographic(ch))
    spaced = sum(1 for word in text.split() if not any(_ideographic(ch) for ch in word))
    return spaced + ideographs


def sentences(text: str) -> list[str]:
    """`text` cut into sentences: at . ! ? … before a space, at a CJK stop, at a line
    break; a part is joined back to the one before it when that one ended in an
    abbreviation or an initial, when it starts in lower case (a wrapped line), or
    when it is a fragment of fewer than `MIN_SENTENCE_WORDS` words (`size`) that
    neither ends in an abbreviation (it starts a sentence: "E.g.") nor is a list
    item. A markdown heading starts a sentence, and the part after it joins it (a
    heading is the context of what follows it, not the end of what came before). A
    fenced code block, fences included, is one passage of its own."""
    out: list[list[str]] = []  # each sentence's parts, joined at the end (a long
    # text of wrapped lines is one sentence: joining part by part was quadratic)
    opened = ""  # the fence of the code block being read, if any
    closed = False  # the part before ended a fenced block: nothing joins onto it
    titled = False  # the part before was a heading: this one joins it
    for part in _END.split(text.strip()):
        part = " ".join(part.split())
        if not part:
            continue
        if opened:  # inside a block: every line joins it, its closing fence too
            out[-1].append(part)
            if closes(part, opened):
                opened, closed = "", True
            continue
        if fence(part):
            out.append([part])
            opened, titled = fence(part), False
            continue
        if _HEADING.match(part):
            out.append([part])
            closed, titled = False, True
            continue
        joins = (
            out
            and not closed
            and (
                titled
                or _ABBREVIATION.search(out[-1][-1]) is not None  # how the sentence ends
                or part[0].islower()
                or (
                    size(part) < MIN_SENTENCE_WORDS
                    and _ABBREVIATION.search(part) is None
                    and _ITEM.match(part) is None
                )
            )
        )
        closed = titled = False
        if joins:
            out[-1].append(part)
        else:
            out.append([part])
    return [" ".join(parts) for parts in out]


def passages_of(text: str) -> list[str]:
    """What a memory's passage vectors read: its sentences, or for a text of more
    than `MAX_PASSAGES` of them, that many runs of neighbouring sentences (the
    first runs one longer when they do not divide evenly)."""
    return [" ".join(run) for run in _runs(text)]


def _runs(text: str) -> list[list[str]]:
    """`passages_of`, each passage as the sentences it joins."""
    found = sentences(text)
    if len(found) <= MAX_PASSAGES:
        return [[s] for s in found]
    each, extra = divmod(len(found), MAX_PASSAGES)
    out, at = [], 0
    for n in range(MAX_PASSAGES):
        take = each + (1 if n < extra else 0)
        out.append(found[at : at + take])
        at += take
    return out


def source(body: str, description: str) -> str:
    """The text a memory's passages are cut from: its body, else its description."""
    return body or description


def texts(doc: Doc) -> list[str]:
    """What the index embeds for `doc`'s passages: each sentence after its title;
    none for a note, a text under `MIN_WORDS` words or of one sentence."""
    if doc.item != MEMORY:
        return []
    text = source(doc.body, doc.description)
    if size(text) < MIN_WORDS:
        return []
    found = passages_of(text)
    if len(found) < 2:
        return []
    head = doc.title or doc.name
    return [embeddable(f"{head}\n{s}" if head else s) for s in found]


def texts_hash(model: str, passages: Sequence[str]) -> str:
    """What a memory's passage vectors depend on: the model and the texts."""
    return fingerprint(model, *passages)


def best(query: Vector, stored: Mapping[str, Vectors]) -> dict[str, float]:
    """Each id's best sentence cosine with `query` (stored rows are unit length)."""
    if not stored:
        return {}
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(q))
    if norm == 0:
        return {}
    q = q / norm
    ids = [i for i, m in stored.items() if m.ndim == 2 and m.shape[0] and m.shape[1] == q.shape[0]]
    if not ids:
        return {}
    block = np.concatenate([stored[i] for i in ids])
    cosines = block @ q
    out: dict[str, float] = {}
    at = 0
    for i in ids:
        rows = stored[i].shape[0]
        out[i] = float(cosines[at : at + rows].max())
        at += rows
    return out


def nearest(text: str, stored: Vectors, query: Vector, terms: Sequence[str] = ()) -> str | None:
    """The sentence of `text` (`source`) nearest the query: its stored vector's cosine
    plus `lexical` for the query's `terms` it holds; of a run (a text of more than
    `MAX_PASSAGES` sentences), the sentence of the run that holds the most of those
    terms, if one holds more than the others (a pack cut to a run's head showed its
    first sentence, not the one that answered). None when the stored rows are not
    this text's sentences any more (an edit the index has not applied yet) or another
    model's."""
    runs = _runs(text)
    found = [" ".join(run) for run in runs]
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    if stored.ndim != 2 or stored.shape != (len(found), q.shape[0]) or not found:
        return None
    best = int(np.argmax(stored @ q + lexical(found, terms)))
    inner = lexical(runs[best], terms)  # a run: the sentence of it holding the query's words
    if len(runs[best]) > 1 and inner.max() > 0:
        return runs[best][int(np.argmax(inner))]
    return found[best]


def lexical(found: Sequence[str], terms: Sequence[str]) -> npt.NDArray[np.float32]:
    """Per sentence, the share of the query terms' weight it holds, each term weighted by
    how few of `found` hold it (log(n / df)): 0 to 1, added to a cosine.

    The model cannot tell "step 1234" from "step 112" (one runbook, every step alike),
    so a pack cut to the sentence nearest in meaning showed the wrong step; a term
    only one sentence holds (an identifier, a number) now decides, while words every
    sentence holds ("step", "log") weigh nothing.
    """
    out = np.zeros(len(found), dtype=np.float32)
    if not terms or len(found) < 2:
        return out
    held = [set(_TERM.findall(fold(s.lower()))) for s in found]  # every word, uncapped
    weights = {}
    for term in terms:
        df = sum(term in h for h in held)
        if 0 < df < len(found):
            weights[term] = math.log(len(found) / df)
    total = sum(weights.values())
    if total <= 0:
        return out
    for n, h in enumerate(held):
        out[n] = sum(w for term, w in weights.items() if term in h) / total
    return out


def focus(
    store: MemoryStore, query: Vector | None, text: str = ""
) -> Callable[[Record], str | None] | None:
    """What a pack asks of a long memory it must cut (`recall.packing`): the sentence
    nearest the query (`nearest`, with the query's words from `text`), read from the
    store when asked. Without a query vector (an identifier is not embedded, nor is
    any query when meaning is off), the sentence holding the most of the query's
    distinguishing words (`worded`): a lower-case `zx-4471-qp` got the runbook's head,
    not the sentence naming it. None when there is neither."""
    terms = words(text)
    if query is None:
        return worded(terms) if terms else None
    q = np.asarray(query, dtype=np.float32).reshape(-1)

    def nearest_of(record: Record) -> str | None:
        if record.item != MEMORY:
            return None
        stored = store.passages([record.id]).get(record.id)
        if stored is None:
            return None
        return nearest(source(record.body, record.description), stored, q, terms)

    return nearest_of


def worded(terms: Sequence[str]) -> Callable[[Record], str | None]:
    """A memory's sentence holding the most of `terms`, by `lexical`; None when no
    sentence holds more of them than another."""

    def holding(record: Record) -> str | None:
        if record.item != MEMORY:
            return None
        found = sentences(source(record.body, record.description))
        share = lexical(found, terms)
        return found[int(np.argmax(share))] if share.size and share.max() > 0 else None

    return holding


def unit_rows(block: Vectors) -> Vectors:
    """Rows scaled to unit length (a zero row stays zero)."""
    m = np.asarray(block, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return (m / np.where(norms > 0, norms, 1.0)).astype(np.float32)
