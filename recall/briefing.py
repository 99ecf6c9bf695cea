"""The session-start briefing: what an agent should know before it starts.

One tag pair around: constraints (always), starred memories (pinned), then a
newest-first index of the rest packed to the budget (default 1500 tokens)
with an overflow trailer "(+N older: use recall)" ("more not shown" when no
index line fits, as it then stands under constraints or pins). When a line that
always shows (constraint, relevant, pinned) does not fit, the trailer says so,
"(+4 of these 6 lines and 19 more not shown: ask with a larger budget)", and room
for it is kept in the budget. A subagent (non-empty
`agent_type`) gets constraints only plus a RELEVANT section matched from its
prompt by the PromptRecall matcher; a main agent that names its task
(`prompt`) gets that RELEVANT section too, between constraints and pins. At
the configured budget, constraints and pins may push past it, never past the
hard cap (budget x 2); a budget the caller names (`MIN_TEXT_BUDGET`, 22, to 100,000)
is used as it is and is a hard bound: the configured budget and its cap do not clip
it, and a briefing with no line in it is one warning that fits it too. Lines
are dropped from the end, and `truncate_block` is the final guard that keeps
UTF-8 whole and the closing tag. Returns the text, the ids actually rendered,
its token count, warnings (a constraint, relevant or pinned line dropped, or no
line shown at all, is said there) and the ids of the lines cut (`omitted`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime

from recall import prompt as prompt_recall
from recall import sanitize
from recall.config import (
    MAX_BUDGET,
    MIN_TEXT_BUDGET,
    TEXT_BUDGET_WHY,
    BriefingConfig,
    PromptConfig,
    out_of_bounds,
)
from recall.errors import QueryError
from recall.planes import Planes
from recall.ports import TokenCounter
from recall.requests import BriefingRequest, PromptRequest
from recall.results import Briefing, age, lead
from recall.scope import recall_filter
from recall.scoring import admits
from recall.types import Filter, Record

CONSTRAINT = "constraint"
_Line = tuple[str, str | None]  # (text, id of the memory it renders)


def run(
    req: BriefingRequest,
    *,
    planes: Planes,
    config: BriefingConfig,
    prompt: PromptConfig,
    corpora: prompt_recall.CorpusCache,
) -> Briefing:
    """The briefing for `req`; a subagent's RELEVANT section runs on `prompt`'s knobs."""
    if req.budget is not None and not MIN_TEXT_BUDGET <= req.budget <= MAX_BUDGET:
        said = out_of_bounds("budget", MIN_TEXT_BUDGET, MAX_BUDGET, req.budget, TEXT_BUDGET_WHY)
        raise QueryError(said, "budget")
    if req.budget is not None:  # what the caller asked for is what it gets, at most
        budget = hard_cap = req.budget
    else:
        budget, hard_cap = config.budget, int(config.budget * config.hard_cap_factor)
    where = recall_filter(planes.store, project=req.project, scope="memories")
    # Constraints are read on their own so that no number of newer memories
    # can push one out of the scan window.
    constraints = _important_first(
        _browse(planes, replace(where, kinds=(CONSTRAINT,)), config.scan_limit)
    )
    rest = [r for r in _browse(planes, where, config.scan_limit) if r.kind != CONSTRAINT]
    # Starred memories are pinned however old; the newest-first index reads
    # only a window, and the trailer counts what lies beyond it.
    seen = {r.id for r in rest}
    rest += [
        r
        for r in _browse(planes, where, config.scan_limit, favorites_only=True)
        if r.kind != CONSTRAINT and r.id not in seen
    ]
    total = planes.store.count(where=where)
    unseen = max(0, total - len(constraints) - len(rest))
    now = planes.clock()
    fixed: list[_Line] = []
    if constraints:
        fixed.append(("CONSTRAINTS (always apply):", None))
        fixed += [_line(r, config, now, req.project, full=True) for r in constraints]
    index: list[_Line] = []
    relevant: list[Record] = []
    if req.agent_type or req.prompt.strip():
        asked = PromptRequest(project=req.project, prompt=req.prompt)
        found = prompt_recall.matches(asked, planes=planes, corpora=corpora, config=prompt)
        relevant = [r for r in found if r.kind != CONSTRAINT][: config.relevant_hits]
        if relevant:
            fixed.append(("RELEVANT to your task:", None))
            fixed += [_line(r, config, now, req.project) for r in relevant]
    if req.agent_type:  # no index: every memory but the lines shown is left out
        unseen = max(0, total - len(constraints) - len(relevant))
    else:  # a main agent's prompt adds RELEVANT; the rest is as ever
        shown = {r.id for r in relevant}
        pinned = _important_first([r for r in rest if r.favorite and r.id not in shown])
        if pinned:
            fixed.append(("PINNED:", None))
            fixed += [_line(r, config, now, req.project) for r in pinned]
        index = [
            _line(r, config, now, req.project) for r in rest if not r.favorite and r.id not in shown
        ]
    if not fixed and not index:
        return Briefing("", (), 0)
    return _assemble(
        planes.tokens, req, config, fixed, index, budget, hard_cap, unseen,
        beyond=unseen if req.agent_type else 0,
    )  # fmt: skip


def _browse(
    planes: Planes, where: Filter, limit: int, *, favorites_only: bool = False
) -> list[Record]:
    found = planes.store.browse(where=where, limit=limit, favorites_only=favorites_only)
    records = [r for r in found if admits(where, r)]
    # The newest-first index: among memories of the same instant, the more important first.
    return sorted(records, key=lambda r: (_stamp(r), r.importance, r.id), reverse=True)


def _stamp(record: Record) -> float:
    return record.updated.timestamp() if record.updated else 0.0


def _important_first(records: Sequence[Record]) -> list[Record]:
    """Constraints and pins by importance (Dakera seed 004), newest first among equals."""
    return sorted(records, key=lambda r: -r.importance)  # stable: keeps newest-first


def _line(
    record: Record, config: BriefingConfig, now: datetime, home: str | None, *, full: bool = False
) -> _Line:
    """One memory's line; a global one in a project's briefing says so ("global
    constraint"): a project memory of the same name read as its duplicate."""
    limit = 4 * config.description_chars if full else config.description_chars
    desc = sanitize.field(lead(record.description, record.body, limit), limit)
    when = age(record.updated, now)
    kind = sanitize.name(record.kind)
    if record.project is None and home is not None:
        kind = f"global {kind}"
    meta = f"{kind}, {when}" if when else kind
    return prompt_recall.listed(sanitize.name(record.name), meta, desc), record.id


def _fit(lines: Sequence[_Line], *, room: int, count: Callable[[str], int]) -> int:
    """How many of `lines`, from the first, fit `room` tokens."""
    used = 0
    for n, (text, _) in enumerate(lines):
        used += count(text)
        if used > room:
            return n
    return len(lines)


def _cut_trailer(cut: int, always: int, more: int) -> str:
    """The last line of a briefing that could not show every line that always shows
    (constraints, relevant, pinned): under them, a cut list read as all there is."""
    rest = f" and {more} more" if more else ""
    what = "constraint, relevant or pinned lines" if cut == always else f"of these {always} lines"
    return f"(+{cut} {what}{rest} not shown: ask with a larger budget)"


def _short_trailers(dropped: int) -> tuple[str, ...]:
    """Shorter last lines, for a budget with no room for the one that says what."""
    return (f"(+{dropped} not shown: ask with a larger budget)", f"(+{dropped} not shown)")


def _assemble(
    tokens: TokenCounter,
    req: BriefingRequest,
    config: BriefingConfig,
    fixed: Sequence[_Line],
    index: Sequence[_Line],
    budget: int,
    hard_cap: int,
    unseen: int = 0,
    *,
    beyond: int = 0,
) -> Briefing:
    """The block; `beyond` of the `unseen` memories no budget would show (a subagent's
    briefing has no index): a cut's "ask with a larger budget" does not count them
    ("(+7 of these 8 lines and 23 more not shown" told a subagent that a larger
    budget would show 23 memories it never shows; with room, the block says "(+23
    more not shown: use recall)")."""

    def count(text: str) -> int:
        # Each line with its newline: line estimates then add up to at least
        # the whole block's estimate, so the packed block never passes the budget.
        return tokens.count(text + "\n")

    project = sanitize.attribute(req.project or "global")
    opening, closing = f'<{config.tag} project="{project}">', f"</{config.tag}>"
    lines: list[_Line] = [(opening, None)]
    used = count(opening) + count(closing)
    if used > hard_cap:  # not even the wrapper fits
        warning = f"{hard_cap} tokens hold not even the briefing's wrapper ({used} tokens)"
        every = tuple(i for _, i in [*fixed, *index] if i is not None)
        return Briefing("", (), 0, (warning + ": ask with a larger budget",), every)
    always = sum(1 for _, i in fixed if i is not None)
    more = len(index) + unseen
    more_cut = more - beyond  # what a larger budget would show besides the cut lines
    # Room for the shortest last line when lines may be left out below: without it
    # the block read as complete (at 200 tokens, six constraint and pinned lines
    # and no "(+19 more not shown: use recall)").
    least = count(_short_trailers(more)[-1]) if more else 0
    kept_fixed = _fit(fixed, room=hard_cap - used - least, count=count)
    if kept_fixed < len(fixed):  # the block must say so: room for the longest such trailer
        worst = max(count(_cut_trailer(cut, always, more_cut)) for cut in (always - 1, always))
        kept_fixed = _fit(fixed, room=hard_cap - used - worst, count=count)
        if not any(i is not None for _, i in fixed[:kept_fixed]):  # not one line under it:
            # a line and "(+24 not shown)" say more than that trailer alone (at 58 to 74
            # tokens the block held the trailer alone, though a line fitted)
            shortest = count(_short_trailers(always + more_cut)[-1])
            kept_fixed = _fit(fixed, room=hard_cap - used - shortest, count=count)
    lines += fixed[:kept_fixed]
    used += sum(count(text) for text, _ in fixed[:kept_fixed])
    while len(lines) > 1 and lines[-1][1] is None:  # a section header with no line under it
        used -= count(lines.pop()[0])
    dropped = sum(1 for _, i in fixed[kept_fixed:] if i is not None)
    warnings = []
    if dropped:  # the lines that always show did not: the caller should know
        warnings.append(
            f"{dropped} of the {always} constraint, relevant and pinned lines did not fit "
            f"{hard_cap} tokens: ask with a larger budget"
        )
    shown: list[_Line] = []
    if index and kept_fixed == len(fixed):
        header = "INDEX (newest first; recall or memory_read by name):"
        used += count(header)
        for n, (text, ident) in enumerate(index):
            trailer = f"(+{len(index) - n - 1 + unseen} older: use recall)"
            if used + count(text) + count(trailer) > budget:
                break
            shown.append((text, ident))
            used += count(text)
        if shown:
            lines += [(header, None), *shown]
        else:  # the header stands under no line: not in the block
            used -= count(header)
        dropped += len(index) - len(shown)
    else:
        dropped += len(index)
    dropped += unseen
    trailers: tuple[str, ...] = ()
    if kept_fixed < len(fixed):  # under CONSTRAINTS it would read as all there is
        left = dropped - more  # the constraint, relevant and pinned lines left out
        trailers = (_cut_trailer(left, always, more_cut), *_short_trailers(left + more_cut))
    elif dropped:  # "older" below the index it continues; else under a section it is not of
        told = "older" if shown else "more not shown"
        trailers = (f"(+{dropped} {told}: use recall)", *_short_trailers(dropped))

    # The longest that fits whole (the block counted whole: its lines' counts add up
    # to more): one cut by `truncate_block` ended mid-word ("(+6 constraint,
    # relevant or pinned lines and 19 m"), or was gone, the block empty.
    def block(*last: str) -> str:
        return "\n".join([*(t for t, _ in lines), *last, closing])

    last = next((t for t in trailers if tokens.count(block(t)) <= hard_cap), None)
    if last is not None:
        lines.append((last, None))
    if len(lines) == 1 and dropped:  # the wrapper alone would read as nothing to know
        # One line, which says every line did not fit: with the cut lines' warning
        # before it, the reason an agent read took 42 tokens (at a budget of 16).
        every = tuple(i for _, i in [*fixed, *index] if i is not None)
        said = f"{budget} tokens held no line of the briefing: ask with a larger budget"
        return Briefing("", (), 0, (said,), every)
    lines.append((closing, None))
    text = "\n".join(t for t, _ in lines)
    text = sanitize.truncate_block(text, max_bytes=hard_cap * 4, closing=closing)
    ids = tuple(i for t, i in lines if i is not None and f"\n{t}\n" in text)
    if dropped and not ids and not warnings:
        warnings.append(f"{budget} tokens held no line of the briefing: ask with a larger budget")
    cut = tuple(i for _, i in [*fixed, *index] if i is not None and i not in ids)
    return Briefing(text, ids, tokens.count(text), tuple(warnings), cut)
