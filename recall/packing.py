"""Token packing for agents: the whole reply, as the agent receives it, fits the budget.

As in fabriq's packer, items go in rank order while they fit and the first
item that cannot fit ends packing (the pack is always a prefix of the
ranking); `omitted` counts the rest. What is counted is the reply itself:
the compact JSON of `recall.agent.pack_view`, envelope included (debug, when
asked, rides outside the budget). An item's `tokens` is its own JSON's count, that
figure in it. Items go in while the envelope's count and theirs, summed, fit; that
sum overstates the reply a little (each count rounds up, the envelope's figures are
said at their widest), so the item it would leave out or cut is sized in the reply
itself, and one the reply holds exactly, within the budget, goes in. Each item
carries its memory's text; an item longer than `item_tokens`, or longer than what is
left, is cut at the last sentence or line boundary that fits (`truncated: true`; `memory_read`
gives the rest), as long as at least `MIN_TEXT_CHARS` of text fit; a text with
no such boundary in reach (one long sentence, Chinese without spaces) at the
last word end, else anywhere; only as much of a long text is read as an item
could hold (`MAX_CHARS_PER_TOKEN`). When the
caller names the sentence that answered the query (`focus`: a long memory's
sentence nearest the query, recall/passages.py) and the cut would drop it, the
item keeps a shorter head and that sentence after an ellipsis instead: the
tokens the agent gets hold what it asked about. A cut inside a fenced code
block closes the fence after the ellipsis, so what follows the item is not read
as code.

A packer of another shape (recall/altitude.py: a digest first, then the rows it does
not cover) composes the same pieces, so its replies fit as exactly: `item_frame` says
the reply around a next item, `in_reply` whether an item fits in it, `fill_items`
places items in rank order, `own_cost` sizes one item, and `settle` counts the final
reply and trims it until it fits.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import tee
from typing import Any

from recall.agent import (
    FULL,
    INDEX,
    body_text,
    dumps,
    envelope,
    home_said,
    item_view,
    text_of,
)
from recall.config import MIN_BUDGET
from recall.errors import BudgetError
from recall.markdown import fence, open_fence
from recall.ports import TokenCounter
from recall.results import ContextPack, Hit
from recall.sanitize import cap
from recall.types import Record

MIN_WARNING_CHARS = 24  # a warning is not cut shorter than this while items can go
MIN_TEXT_CHARS = 24  # a cut shorter than this says too little to be worth its envelope
MIN_WORD_CHARS = 12  # ... unless it ends a word where the next cut would split one
NOTHING_FITS = "nothing packed: the best hit needs a budget of"
NOTHING_FITS_SHORT = "nothing packed: needs a budget of"  # its figures kept where room is short
NEEDS = "needs a budget of"  # the least that says the figure: shorter than MIN_WARNING_CHARS
# Sentence and line ends (a CJK stop needs no space after it), then word ends, then
# every few characters: a text of one long sentence, or of no spaces, is still cut.
_BOUNDARY = re.compile(r"(?<=[.!?…])\s+|(?<=[。！？；])|\n+")
_WORD = re.compile(r"\s+")
CHAR_STEP = 4
# No counter gives a token for more characters than this: a cut never needs more of a
# long text than room x this, so a 150 KB memory is not counted whole at every try.
MAX_CHARS_PER_TOKEN = 16
ELLIPSIS = "…"


@dataclass(frozen=True, slots=True)
class Packed:
    items: tuple[Hit, ...]
    omitted: int
    tokens: int
    warnings: tuple[str, ...]


def _cost(counter: TokenCounter, hit: Hit, detail: str, home: str | None = None) -> int:
    """An item's cost in the reply: its JSON, its own `tokens` figure in it, and the comma
    before it (`home`: the pack's project, which the item leaves out)."""
    return own_cost(counter, item_view(hit, detail=detail, home=home))


def own_cost(counter: TokenCounter, view: dict[str, Any]) -> int:
    """What `view` costs with its `tokens` saying so (left set to it): a fixed point,
    as the reply's own count is (`_reply_tokens`)."""
    return _sized(counter, view)[0]


def _sized(counter: TokenCounter, view: dict[str, Any]) -> tuple[int, str]:
    """`view`'s own cost (`own_cost`) and its JSON with that figure in it."""
    view["tokens"] = 0
    head, tail = dumps(view).rsplit('"tokens":0', 1)  # one dumps: only the figure changes

    def count(tokens: int) -> int:
        return counter.count(f'{head}"tokens":{tokens}{tail},')

    view["tokens"] = cost = _fixed(count, 100)
    return cost, f'{head}"tokens":{cost}{tail}'


def _fixed(count: Callable[[int], int], start: int) -> int:
    """The figure `n` with `count(n) == n`, from `start` (a count that is part of what
    it counts); when the digits flip-flop, the larger."""
    tokens = count(start)
    for _ in range(3):
        again = count(tokens)
        if again == tokens:
            return tokens
        tokens = again
    return max(tokens, count(tokens))


Fits = Callable[[dict[str, Any]], bool]  # whether an item's view fits where it would go


def _alone(counter: TokenCounter, room: int) -> Fits:
    """An item that costs at most `room` on its own. Its figure is said as `room`, which
    has as many digits as the cost of an item that fits can have, or more: the check is
    the fixed point's, one count a try (a count grows with a figure's digits)."""

    def fits(view: dict[str, Any]) -> bool:
        view["tokens"] = room
        return counter.count(dumps(view) + ",") <= room

    return fits


Frame = Callable[[Sequence[Hit]], tuple[str, str]]  # the reply around a next item, as sent


def in_reply(counter: TokenCounter, around: tuple[str, str], budget: int, cap: int) -> Fits:
    """An item whose whole reply, its real figures in it, fits `budget` (`around`: the
    reply's text before and after the item, its `tokens` said as `budget`: the reply
    fits when that count does, as in `_alone`), and that costs at most `cap` (0: no cap)."""
    head, tail = around

    def fits(view: dict[str, Any]) -> bool:
        cost, sent = _sized(counter, view)
        return not 0 < cap < cost and counter.count(f"{head}{sent}{tail}") <= budget

    return fits


def item_frame(
    shape: Callable[[int], dict[str, Any]], key: str, detail: str, home: str | None
) -> Frame:
    """`Frame` for items that go in the list at `key` of the reply `shape(n)` makes when
    n items came before (the list given empty: what the next one would change)."""

    def frame(before: Sequence[Hit]) -> tuple[str, str]:
        head, tail = dumps(shape(len(before))).split(f'"{key}":[]', 1)
        views = "".join(dumps(item_view(h, detail=detail, home=home)) + "," for h in before)
        return f'{head}"{key}":[{views}', f"]{tail}"

    return frame


def _cut(head: str, joint: str = "") -> str:
    """`head`, a text cut short: its words, `joint`, an ellipsis, then on a line of
    its own the closing of a fenced code block the cut left open."""
    closing = open_fence(head)
    cut = f"{head.rstrip()}{joint}{ELLIPSIS}"
    return f"{cut}\n{closing}" if closing else cut


def _joined(head: str, tail: str) -> str:
    """A head cut short, then `tail`: on a line of its own when the head closed a fence
    or `tail` opens one (a fence inside a line is no fence)."""
    return f"{_cut(head, ' ')}{_gap(tail, open_fence(head))}{tail}"


def _gap(tail: str, after_fence: str = "") -> str:
    """What goes before `tail` after an ellipsis: a line break before a fence."""
    return "\n" if after_fence or fence(tail) else " "


def _cuts(text: str) -> Iterator[list[int]]:
    """Where the text may be cut, each list longest first, in the order to try:
    sentence and line ends, word ends, every `CHAR_STEP` characters. Each list is
    found when asked for: a cut at a sentence end seldom needs the word ends (a scan
    of the whole text), a cut at a word end never needs the character steps."""
    ends = sorted({m.start() for m in _BOUNDARY.finditer(text)}, reverse=True)
    yield [e for e in ends if e >= MIN_TEXT_CHARS and not _opens_empty(text, e)]
    # A word end a little short of MIN_TEXT_CHARS beats a cut inside the next word
    # ("Stripe retries webhooks…", not "Stripe retries webhooks f…").
    ends = sorted({m.start() for m in _WORD.finditer(text)}, reverse=True)
    yield [e for e in ends if e >= MIN_WORD_CHARS]
    yield list(range(len(text) - 1, MIN_TEXT_CHARS - 1, -CHAR_STEP))


def _opens_empty(text: str, end: int) -> bool:
    """Whether the line ending at `end` opens a code block: cut there, the text ended in
    an empty block whose language read "bash…" (a runbook read at 160 tokens)."""
    line = text[text.rfind("\n", 0, end) + 1 : end]
    return bool(fence(line)) and bool(open_fence(text[:end]))


Focus = Callable[[Record], str | None]  # the sentence of a record that answered, if known


def _reach(room: int) -> int:
    """How many characters of a text an item of `room` tokens could ever show."""
    return room * MAX_CHARS_PER_TOKEN + 1


def _fit(
    hit: Hit,
    text: str,
    room: int,
    fits: Fits,
    focus: str | None = None,
    *,
    clipped: bool = False,
    last: bool = False,
    home: str | None = None,
) -> Hit | None:
    """`hit` with the longest cut of `text` whose item `fits` (at most `room` tokens: how
    much of a text to read), at a sentence end if one fits, else a word end, else
    anywhere; with `focus` beyond that cut, the longest head that fits with it after
    it, else the focus alone, cut the same way. `clipped`: `text` is only the head of
    the memory's text (`text_of`'s limit), so a focus not in it comes from beyond it;
    `last`: nothing follows that focus in the memory (no "…" after it)."""
    levels, again = tee(_cuts(text[: _reach(room)]))  # `again`: the heads below
    best = _first(hit, levels, lambda cut: _cut(text[:cut]), fits, home)
    found = _locate(text, focus) if focus else None
    if focus and found is None and clipped:
        said, start, more = body_text(focus, opening=False), len(text), not last
    elif focus and found is not None:
        said, start, more = text[found[0] : found[1]], found[0], bool(text[found[1] :].strip())
    else:
        return best  # no focus, or one the text does not hold any more
    if best is not None and found is not None and (best.text or "").startswith(text[: found[1]]):
        return best  # the head already holds it
    tail = said + (f" {ELLIPSIS}" if more else "")
    heads = ([cut for cut in cuts if cut <= start] for cuts in again)
    with_focus = _first(hit, heads, lambda cut: _joined(text[:cut], tail), fits, home)
    if with_focus is not None:
        return with_focus
    # too long to follow a head: its own beginning, cut
    alone = _first(
        hit, _cuts(said[: _reach(room)]),
        lambda cut: f"{ELLIPSIS}{_gap(said)}{_cut(said[:cut], ' ')}", fits, home,
    )  # fmt: skip
    return alone or best


def _first(
    hit: Hit,
    levels: Iterable[Sequence[int]],
    shape: Callable[[int], str],
    fits: Fits,
    home: str | None = None,
) -> Hit | None:
    """The longest fitting cut of the first level of cuts that has one."""
    for cuts in levels:
        found = _longest(hit, cuts, shape, fits, home)
        if found is not None:
            return found
    return None


def _longest(
    hit: Hit,
    cuts: Sequence[int],
    shape: Callable[[int], str],
    fits: Fits,
    home: str | None = None,
) -> Hit | None:
    """`hit` with the text `shape` makes of the longest of `cuts` (longest first) that fits."""

    # One view for every try: only its text changes (an item view per try, each from a
    # copy of the hit, was most of what a cut cost).
    view = item_view(replace(hit, text="", truncated=True), detail=FULL, home=home)

    def holds(text: str) -> bool:
        view["text"] = text
        return fits(view)

    found = _longest_text(cuts, shape, holds)
    return None if found is None else replace(hit, text=found, truncated=True)


def _longest_text(
    cuts: Sequence[int], shape: Callable[[int], str], fits: Callable[[str], bool]
) -> str | None:
    """The text `shape` makes of the longest of `cuts` (longest first) that `fits`."""
    lo, hi, best = 0, len(cuts) - 1, None
    while lo <= hi:  # cuts run longest first: find the first (longest) that fits
        mid = (lo + hi) // 2
        candidate = shape(cuts[mid])
        if fits(candidate):
            best, hi = candidate, mid - 1
        else:
            lo = mid + 1
    return best


def cut_to_fit(text: str, fits: Callable[[str], bool], *, room: int) -> str | None:
    """The longest head of `text` that `fits` in `room` tokens, cut as a packed item's
    text is: at a sentence or line end if one fits, else a word end, else anywhere, an
    ellipsis after it and a fenced code block it leaves open closed (None: not even
    the shortest cut fits). For a text cut outside a pack (a memory read with a budget)."""
    for cuts in _cuts(text[: _reach(room)]):
        found = _longest_text(cuts, lambda cut: _cut(text[:cut]), fits)
        if found is not None:
            return found
    return None


def _locate(text: str, sentence: str) -> tuple[int, int] | None:
    """Where `sentence` stands in `text`, whatever the spaces between its words (or
    none: a CJK text's sentences are joined without)."""
    words = sentence.split()
    if not words:
        return None
    found = re.search(r"\s*".join(re.escape(w) for w in words), text)
    return (found.start(), found.end()) if found else None


def _as_written(record: Record, sentence: str) -> tuple[str, bool]:
    """`sentence` (a passage: its words, spaces collapsed) as the memory's text holds
    it, line breaks and all (a code block's lines), itself when not found; and
    whether it ends the text."""
    raw = f"{record.description}\n{record.body}"
    found = _locate(raw, sentence)
    if found is None:
        return sentence, False
    return raw[found[0] : found[1]], not raw[found[1] :].strip()


def _reply_tokens(
    counter: TokenCounter,
    items: Sequence[Hit],
    *,
    omitted: int,
    budget: int,
    warnings: Sequence[str],
    detail: str,
    total_found: int | None = None,
    associated: Sequence[Hit] | None = None,
    pack_id: str | None = None,
    home: str | None = None,
) -> int:
    """The reply's token count: a fixed point, since the count is part of what it counts."""
    views = [item_view(h, detail=detail, home=home) for h in items]
    linked = (
        None if associated is None else [item_view(h, detail=detail, home=home) for h in associated]
    )

    def count(tokens: int) -> int:
        reply = envelope(
            views, omitted=omitted, tokens=tokens, budget=budget, warnings=warnings,
            total_found=total_found, associated=linked, pack_id=pack_id,
            project=home_said(home, views, linked),
        )  # fmt: skip
        return counter.count(dumps(reply))

    return _fixed(count, budget)


def pack(
    ranked: Sequence[tuple[Hit, Record]],
    *,
    budget: int,
    counter: TokenCounter,
    detail: str = FULL,
    item_tokens: int = 0,
    warnings: Sequence[str] = (),
    total_found: int | None = None,
    associated: bool = False,
    pack_id: str | None = None,
    focus: Focus | None = None,
    explain: bool = True,
    home: str | None = None,
) -> Packed:
    """The longest prefix of `ranked` whose reply fits `budget` (see the module docstring).

    `total_found` rides in the envelope when given; `associated=True` makes
    room for an (empty) `associated` list, which `attach` then fills; `focus`
    is asked only for an item that must be cut; `explain` False leaves out the warning
    naming the budget an empty pack needs (`_nothing_fits` packs to find it); `home`:
    the recall's project, said once in the envelope and left out of its items.
    """
    if budget < MIN_BUDGET:
        raise BudgetError(f"budget must be at least {MIN_BUDGET} tokens, not {budget}")
    base = envelope(
        [], omitted=len(ranked), tokens=budget, budget=budget, warnings=warnings,
        total_found=total_found, associated=[] if associated else None, pack_id=pack_id,
        project=home,
    )  # fmt: skip
    left = budget - counter.count(dumps(base))

    def shape(before: int) -> dict[str, Any]:  # the reply with the next item after `before`
        return envelope(
            [], omitted=len(ranked) - before - 1, tokens=budget, budget=budget,
            warnings=warnings, total_found=total_found, associated=[] if associated else None,
            pack_id=pack_id, project=home,
        )  # fmt: skip

    items = fill_items(
        ranked, left, counter=counter, detail=detail, item_tokens=item_tokens, focus=focus,
        home=home, frame=item_frame(shape, "items", detail, home), budget=budget,
    )  # fmt: skip
    said = tuple(warnings)
    if ranked and not items and explain:

        def holds(at: int, as_: str) -> bool:
            again = pack(
                ranked, budget=at, counter=counter, detail=as_, item_tokens=item_tokens,
                warnings=warnings, total_found=total_found, associated=associated,
                pack_id=pack_id, focus=focus, explain=False, home=home,
            )  # fmt: skip
            return bool(again.items)

        said += (
            _nothing_fits(
                ranked[0], budget - left, counter=counter, detail=detail, holds=holds, home=home
            ),
        )
    return settle(
        counter, items, len(ranked), budget, said, detail, total_found,
        [] if associated else None, pack_id, home,
    )  # fmt: skip


def _nothing_fits(
    best: tuple[Hit, Record],
    envelope_: int,
    *,
    counter: TokenCounter,
    detail: str,
    holds: Callable[[int, str], bool],
    home: str | None = None,
) -> str:
    """NOTHING_FITS and the least budget that would hold the best hit (its text cut as
    short as it may be), and at detail "index" when less: at 100 tokens no memory fits in full
    (the envelope takes about 47, an item's fields about 70), and an agent told only
    "exceeds" had no way to know what to ask for. Each figure is exact, the least budget
    at which `holds` (a pack at that budget and detail holds an item), found near the
    estimate (`_least`): the reply's own figures (its budget, its count, what it left
    out) made the estimate a token or two off either way, and an agent asking with the
    figure it was given got nothing again, or could have asked with one less."""
    hit, record = best
    least = _least(envelope_ + _cost(counter, hit, INDEX, home), INDEX, holds)
    if detail == INDEX:
        return f"{NOTHING_FITS} {least}"
    head = replace(hit, text=_cut(text_of(record, limit=MIN_WORD_CHARS)), truncated=True)
    full = _least(envelope_ + _cost(counter, head, FULL, home), FULL, holds)
    if least >= full:  # a long description costs more than a cut text
        return f"{NOTHING_FITS} {full}"
    return f"{NOTHING_FITS} {full} ({least} with detail 'index')"


LEAST_TRIES = 16  # budgets tried past an estimate (it is off by a token or two)


def _least(estimate: int, detail: str, holds: Callable[[int, str], bool]) -> int:
    """The least budget at which a pack holds an item (`_nothing_fits`), searched from
    `estimate` both ways. The estimate counts the envelope at the budget asked: from 101,
    "budget":101 and "tokens":101 are two bytes longer than at 91, and the figure came a
    token high ("102 (92 with detail 'index')", where 91 held the item) when the search
    went only up from it."""
    start = max(estimate, MIN_BUDGET)
    if not holds(start, detail):
        return next(
            (b for b in range(start + 1, estimate + LEAST_TRIES) if holds(b, detail)), estimate
        )
    floor = max(MIN_BUDGET, estimate - LEAST_TRIES)
    least = start
    while least > floor and holds(least - 1, detail):
        least -= 1
    return least


def _shorter(warning: str) -> str:
    """`warning` shortened for a reply over its budget: its head, or for a nothing-fits
    warning its short form, which keeps the figures (what the agent asks with next: cut
    from the end, an agent at budget 50 read "nothing was packed (" and no figure)."""
    if warning.startswith(NOTHING_FITS):
        return NOTHING_FITS_SHORT + warning[len(NOTHING_FITS) :]
    if warning.startswith(NOTHING_FITS_SHORT) or len(warning) <= MIN_WARNING_CHARS:
        return warning
    return cap(warning, max(MIN_WARNING_CHARS, len(warning) // 2))  # at a word's end


def _terser(warning: str) -> str:
    """A nothing-fits warning's next shorter form that still gives the figure for the
    detail asked: without the one at detail "index", then as `NEEDS` and the figure
    alone. Cut to MIN_WARNING_CHARS, the demo's recall at budgets 50 to 55 (a pack id,
    associated asked) read "nothing packed: needs…" and no figure."""
    if not warning.startswith(NOTHING_FITS_SHORT):
        return warning
    figures = warning[len(NOTHING_FITS_SHORT) :]
    if " (" in figures:
        return NOTHING_FITS_SHORT + figures.split(" (", 1)[0]
    return NEEDS + figures


def attach(
    packed: Packed,
    linked: Sequence[tuple[Hit, Record]],
    *,
    budget: int,
    counter: TokenCounter,
    detail: str = FULL,
    item_tokens: int = 0,
    total_found: int | None = None,
    pack_id: str | None = None,
    home: str | None = None,
) -> tuple[Packed, tuple[Hit, ...]]:
    """`packed` (made with `associated=True`) and the prefix of `linked` that still fits.

    The main items stay as they are; associated items take what is left of
    the budget, in order, by the same rules (cut to fit, the first that
    cannot fit ends it), and are dropped first if the final count is over.
    A warning says how many found no room, when it fits itself.
    """
    left = budget - packed.tokens
    main = [item_view(h, detail=detail, home=home) for h in packed.items]

    def shape(before: int) -> dict[str, Any]:  # the reply with the next associated item
        return envelope(
            main, omitted=packed.omitted, tokens=budget, budget=budget, warnings=packed.warnings,
            total_found=total_found, associated=[], pack_id=pack_id, project=home,
        )  # fmt: skip

    extra = fill_items(
        linked, left, counter=counter, detail=detail, item_tokens=item_tokens, home=home,
        frame=item_frame(shape, "associated", detail, home), budget=budget,
    )  # fmt: skip

    def reply(said: tuple[str, ...]) -> int:
        return _reply_tokens(
            counter, packed.items, omitted=packed.omitted, budget=budget, warnings=said,
            detail=detail, total_found=total_found, associated=extra, pack_id=pack_id,
            home=home,
        )  # fmt: skip

    while True:
        dropped = len(linked) - len(extra)
        said = (*packed.warnings, _no_room(dropped)) if dropped else packed.warnings
        tokens = reply(said)
        if tokens <= budget:
            return replace(packed, tokens=tokens, warnings=said), tuple(extra)
        if not extra:  # not even the warning fits: the pack as it was made, which fit
            return replace(packed, tokens=reply(packed.warnings)), ()
        extra.pop()


def _no_room(n: int) -> str:
    return f"{n} associated {'memory' if n == 1 else 'memories'} found no room in the budget"


def fill_items(
    ranked: Sequence[tuple[Hit, Record]],
    left: int,
    *,
    counter: TokenCounter,
    detail: str,
    item_tokens: int,
    focus: Focus | None = None,
    home: str | None = None,
    frame: Frame | None = None,
    budget: int = 0,
) -> list[Hit]:
    """Items in order while they fit in `left` tokens (cut to fit where they can).

    `left` less the items' costs overstates what the reply takes a little (each count
    rounds up; the envelope's figures are said at their widest): with `frame`, an item
    that sum cannot hold whole is sized in the reply itself, whose count, its real
    figures in it, must be at most `budget`, so an item the reply holds exactly goes in.
    """
    items: list[Hit] = []
    asked: dict[str, str | None] = {}

    def said(record: Record) -> str | None:  # each record's focus asked for once
        if focus is None:
            return None
        if record.id not in asked:
            asked[record.id] = focus(record)
        return asked[record.id]

    read: dict[str, str] = {}

    def text(record: Record, limit: int) -> str:  # a text read whole is read once
        if len(record.description) + len(record.body) + 1 > limit:
            return text_of(record, limit=limit)
        if record.id not in read:
            read[record.id] = text_of(record, limit=limit)
        return read[record.id]

    for hit, record in ranked:
        capped = 0 < item_tokens < left
        room = item_tokens if capped else left
        exact = frame is not None and not capped
        placed = _place(
            hit, record, room, _alone(counter, room), counter=counter, detail=detail,
            focus=said, text=text, home=home, whole=exact,
        )  # fmt: skip
        if placed is not None:
            left -= placed.tokens or 0
        elif exact and frame is not None:
            head, tail = frame(items)
            # what an item can cost in a reply that fits (a count rounds up: one token
            # more than the reply without it leaves), for how much of its text to read
            room = budget - counter.count(head + tail) + 1
            room = min(room, item_tokens) if item_tokens else room
            if room < 1:
                break
            fits = in_reply(counter, (head, tail), budget, item_tokens)
            placed = _place(
                hit, record, room, fits, counter=counter, detail=detail, focus=said, text=text,
                home=home,
            )  # fmt: skip
            if placed is not None:  # what the reply, its real count, leaves
                view = dumps(item_view(placed, detail=detail, home=home))
                left = budget - counter.count(f"{head}{view}{tail}")
        if placed is None:
            break
        items.append(placed)
        if placed.truncated and not capped:
            break  # cut to what was left: the budget is spent
    return items


def _place(
    hit: Hit,
    record: Record,
    room: int,
    fits: Fits,
    *,
    counter: TokenCounter,
    detail: str,
    focus: Focus,
    text: Callable[[Record, int], str],
    home: str | None,
    whole: bool = False,
) -> Hit | None:
    """`hit` whole when it `fits`, else cut to fit in at most `room` tokens (`whole`:
    not cut), its `tokens` its own cost; None when neither fits."""
    limit = _reach(room)
    clipped = len(record.description) + len(record.body) + 1 > limit
    if clipped and detail == FULL and whole:  # a clipped text is never whole
        return None
    full = replace(hit, text=text(record, limit)) if detail == FULL else hit
    view = item_view(full, detail=detail, home=home)
    if not (clipped and detail == FULL) and fits(view):
        return replace(full, tokens=own_cost(counter, view))
    if whole or detail != FULL:
        return None
    said = focus(record)
    said = said[: _reach(room)] if said else None  # no item shows more of it
    last = False
    if said and clipped:  # beyond what was read: its lines as the text has them
        said, last = _as_written(record, said)
    cut = _fit(full, full.text or "", room, fits, said, clipped=clipped, last=last, home=home)
    return None if cut is None else replace(cut, tokens=_cost(counter, cut, FULL, home))


def settle(
    counter: TokenCounter,
    items: list[Hit],
    total: int,
    budget: int,
    warnings: tuple[str, ...],
    detail: str,
    total_found: int | None = None,
    associated: Sequence[Hit] | None = None,
    pack_id: str | None = None,
    home: str | None = None,
) -> Packed:
    """Count the final reply; shorten warnings, then drop items, until it fits."""
    said = list(warnings)
    while True:
        omitted = total - len(items)
        tokens = _reply_tokens(
            counter, items, omitted=omitted, budget=budget, warnings=said, detail=detail,
            total_found=total_found, associated=associated, pack_id=pack_id, home=home,
        )  # fmt: skip
        if tokens <= budget:
            return Packed(tuple(items), omitted, tokens, tuple(said))
        shorter = [_shorter(w) for w in said]
        if shorter != said:
            said = shorter
        elif items:
            items.pop()
        elif len(said) > 1 and (figures := [w for w in said if w.startswith(NOTHING_FITS_SHORT)]):
            said = figures  # the budget to ask with, before any other word (an agent read
            # "altitude scope: the dige" and "nothing packed: needs a", and no figure)
        elif (terser := [_terser(w) for w in said]) != said:
            said = terser  # the figure for the detail asked, in fewer words
        elif any(len(w) > MIN_WARNING_CHARS for w in said):  # no figure: the head
            said = [cap(w, MIN_WARNING_CHARS) for w in said]
        else:  # not even the figure fits: the error says it
            figure = next((f"; {w}" for w in warnings if w.startswith(NOTHING_FITS)), "")
            raise BudgetError(f"budget {budget} cannot hold this reply's own envelope{figure}")


def relabel(pack_: ContextPack, pack_id: str | None, counter: TokenCounter) -> ContextPack | None:
    """`pack_` under another `pack_id` (the hot tier answering a new recorded recall),
    its tokens counted again; None when the reply would no longer fit its budget."""
    if pack_.pack_id == pack_id:
        return pack_
    tokens = _reply_tokens(
        counter, pack_.items, omitted=pack_.omitted, budget=pack_.budget,
        warnings=pack_.warnings, detail=pack_.detail, total_found=pack_.total_found,
        associated=pack_.associated, pack_id=pack_id, home=pack_.project,
    )  # fmt: skip
    return replace(pack_, pack_id=pack_id, tokens=tokens) if tokens <= pack_.budget else None


__all__ = [
    "FULL", "INDEX", "MIN_BUDGET", "NOTHING_FITS", "Fits", "Frame", "Packed", "attach",
    "cut_to_fit", "fill_items", "in_reply", "item_frame", "own_cost", "pack", "relabel",
    "settle",
]  # fmt: skip
