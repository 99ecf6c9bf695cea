"""Which altitude answers a recall: entity rows, a scope digest or a tenant digest.

fabriq's AltEntity / AltScope / AltTenant / AltAuto (seed 000), over the
digests of recall/digest.py:

- `entity`: the ranked rows, packed as always (the default);
- `scope`: the bound project's digest, then the ranked rows it does not cover;
- `tenant`: the digest over every project the caller may see (the edge
  passes only those digests), then the rows it does not cover;
- `auto`: rows when they fit, else the scope digest (the tenant digest when
  the recall is bound to no project). The rows **do not fit** when the
  entity pack leaves out or cuts short any of the top `AUTO_ROWS` ranked
  rows (fewer when `limit` or the ranking is shorter): those are the rows
  an agent should see whole (the relevance cut; the default `limit` is
  "as many as fit", so the limit itself cannot be the cut).

A digest and a row it covers never share a pack: the digest goes first, cut
to the whole sentences that fit, and covers what those sentences cover; the
rows follow in rank order without the covered ones. Asked for a digest
that is not built (or whose first sentence alone overflows the budget), the
recall answers with rows and a warning says so. `debug["altitude"]` says
which altitude answered and why.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from recall import digest as digests
from recall.agent import FULL, dumps, envelope, item_view
from recall.errors import QueryError
from recall.packing import (
    Fits,
    Frame,
    Packed,
    fill_items,
    in_reply,
    item_frame,
    own_cost,
    pack,
    settle,
)
from recall.ports import TokenCounter
from recall.results import ContextPack, Hit
from recall.types import Record

AUTO, ENTITY, SCOPE, TENANT = "auto", "entity", "scope", "tenant"
ALTITUDES = (AUTO, ENTITY, SCOPE, TENANT)
DIGEST = "digest"
NO_DIGEST = "altitude {altitude}: no digest of {where} is built yet; answered with rows"
TOO_BIG = "altitude {altitude}: the digest's first sentence exceeds the budget; answered with rows"
# A digest is rebuilt a few seconds after the rows it summarises change (an edited one
# when a person asks): until then a sentence may say what was archived or replaced.
STALE = (
    "altitude {altitude}: the digest predates the latest changes to its memories (being "
    "rebuilt); the memories listed after it are current"
)


@dataclass(frozen=True, slots=True)
class Answered:
    """The pack at the altitude that answered, what its digest covers, and why."""

    packed: Packed
    altitude: str
    covered: frozenset[str] = frozenset()
    debug: dict[str, object] = field(default_factory=dict)


def validate(altitude: str | None) -> None:
    if altitude is not None and altitude not in ALTITUDES:
        raise QueryError(f"altitude must be one of {', '.join(ALTITUDES)}, not {altitude!r}")


AUTO_ROWS = 10  # the relevance cut of `auto` (the recall limit ARCHITECTURE.md names)


def fits_pack(packed: Packed | ContextPack, ranked: int) -> bool:
    """Whether the top min(AUTO_ROWS, `ranked`) ranked rows went in whole."""
    top = packed.items[: min(AUTO_ROWS, ranked)]
    return len(top) == min(AUTO_ROWS, ranked) and not any(h.truncated for h in top)


def wanted(
    asked: str,
    entity: Packed,
    ranked: int,
    *,
    project: str | None,
    digests_: Sequence[digests.Digest],
) -> tuple[str, digests.Digest | None, str]:
    """(altitude to try, its digest or None, why) for a recall asked at `asked`."""
    if asked == ENTITY:
        return ENTITY, None, "asked for rows"
    top = min(AUTO_ROWS, ranked)
    if asked == AUTO:
        if fits_pack(entity, ranked):
            return ENTITY, None, f"auto: the top {top} ranked rows fit the budget whole"
        climb = SCOPE if project is not None else TENANT
        why = f"auto: the top {top} ranked rows need more than the budget, so {climb}"
        return climb, pick(climb, project=project, digests_=digests_), why
    return asked, pick(asked, project=project, digests_=digests_), f"asked for {asked}"


def pick(
    altitude: str, *, project: str | None, digests_: Sequence[digests.Digest]
) -> digests.Digest | None:
    """The scope digest of `project`, or the tenant digest over all of `digests_`."""
    if altitude == SCOPE:
        return next((d for d in digests_ if d.project == project and d.sentences), None)
    return digests.tenant([d for d in digests_ if d.sentences], bound=project)


@dataclass(frozen=True, slots=True)
class Packing:
    """What `recall.packing.pack` takes besides the ranking."""

    budget: int
    counter: TokenCounter
    detail: str = FULL
    item_tokens: int = 0
    warnings: tuple[str, ...] = ()
    total_found: int | None = None
    associated: bool = False
    pack_id: str | None = None
    limit: int | None = None  # items at most, the digest one of them
    home: str | None = None  # the recall's project, said once in the envelope


def answer(
    asked: str,
    entity: Packed,
    ranked: Sequence[tuple[Hit, Record]],
    *,
    project: str | None,
    digests_: Sequence[digests.Digest],
    how: Packing,
) -> Answered:
    """The pack at the altitude `asked` (see the module docstring)."""
    altitude, chosen, why = wanted(asked, entity, len(ranked), project=project, digests_=digests_)
    debug: dict[str, object] = {"asked": asked, "answered": altitude, "why": why}
    if altitude == ENTITY:
        return Answered(entity, ENTITY, debug=debug)
    packed, covered = None, frozenset[str]()
    if chosen is None:
        where = "the visible projects" if altitude == TENANT else project or "the global memories"
        said = NO_DIGEST.format(altitude=altitude, where=where)
    else:
        told = (*how.warnings, STALE.format(altitude=altitude)) if chosen.stale else how.warnings
        packed, covered = with_digest(
            chosen, ranked, altitude=altitude, project=project, how=replace(how, warnings=told)
        )
        if packed is None and chosen.stale:  # no room to say so: the digest all the same
            packed, covered = with_digest(
                chosen, ranked, altitude=altitude, project=project, how=how
            )
        said = TOO_BIG.format(altitude=altitude)
    if packed is None:  # fall back to the rows, and say so
        fallback = pack(
            ranked, budget=how.budget, counter=how.counter, detail=how.detail,
            item_tokens=how.item_tokens, warnings=(*how.warnings, said),
            total_found=how.total_found, associated=how.associated, pack_id=how.pack_id,
            home=how.home,
        )  # fmt: skip
        debug.update(answered=ENTITY, why=f"{why}; {said}")
        return Answered(fallback, ENTITY, debug=debug)
    debug.update(
        digest_sentences=len((packed.items[0].text or "").split("\n")),
        covered=sorted(covered), stale=chosen is not None and chosen.stale,
    )  # fmt: skip
    return Answered(packed, altitude, covered, debug)


def digest_hit(
    digest: digests.Digest, sentences: int, *, altitude: str, project: str | None
) -> Hit:
    """The first `sentences` sentences of `digest` as a pack item (kind "digest")."""
    where = digest.project if altitude == SCOPE else None
    name = f"digest-{where or ('global' if altitude == SCOPE else 'tenant')}"
    chosen = digest.sentences[:sentences]
    covers = len({i for s in chosen for i in s.covers})
    return Hit(
        kind=DIGEST, id=name, name=name, title=name, description="",
        project=where if altitude == SCOPE else project, age="", source=DIGEST, score=1.0,
        text="\n".join(s.text for s in chosen), covers=covers,
    )  # fmt: skip


def with_digest(
    digest: digests.Digest,
    ranked: Sequence[tuple[Hit, Record]],
    *,
    altitude: str,
    project: str | None,
    how: Packing,
) -> tuple[Packed | None, frozenset[str]]:
    """The digest's longest sentence prefix that fits, then the uncovered rows.

    (None, empty) when not even its first sentence fits. The digest is not
    held to `item_tokens` (it is not one of the ranked rows).
    """
    base = envelope(
        [], omitted=len(ranked), tokens=how.budget, budget=how.budget, warnings=how.warnings,
        total_found=how.total_found, associated=[] if how.associated else None,
        pack_id=how.pack_id, project=how.home,
    )  # fmt: skip
    left = how.budget - how.counter.count(dumps(base))

    def uncovered(n: int) -> list[tuple[Hit, Record]]:  # the rows n sentences leave
        covered = {i for s in digest.sentences[:n] for i in s.covers}
        return [(h, r) for h, r in ranked if h.id not in covered]

    def framing(rows: int) -> Frame:  # around the next item, `rows` rows after the digest
        def shape(before: int) -> dict[str, Any]:  # the reply with the next after `before`
            return envelope(  # items, the digest among them: 1 + rows in all
                [], omitted=rows - before, tokens=how.budget, budget=how.budget,
                warnings=how.warnings, total_found=how.total_found,
                associated=[] if how.associated else None, pack_id=how.pack_id,
                project=how.home,
            )  # fmt: skip

        return item_frame(shape, "items", how.detail, how.home)

    def fits(n: int) -> Fits:  # the digest of n sentences, sized in the reply itself
        return in_reply(how.counter, framing(len(uncovered(n)))([]), how.budget, 0)

    n, hit = _longest(digest, fits, counter=how.counter, altitude=altitude, project=project,
                      detail=how.detail, home=how.home)  # fmt: skip
    if hit is None:
        return None, frozenset()
    covered = frozenset(i for s in digest.sentences[:n] for i in s.covers)
    rows = uncovered(n)
    room = left - (hit.tokens or 0)
    places = rows if how.limit is None else rows[: max(0, how.limit - 1)]
    # A row the summed estimate cannot hold whole is sized in the reply itself, the
    # digest ahead of the rows placed so far, as `recall.packing.pack` sizes its items.
    framed = framing(len(rows))
    rest = fill_items(
        places, room, counter=how.counter, detail=how.detail, item_tokens=how.item_tokens,
        home=how.home, frame=lambda before: framed([hit, *before]), budget=how.budget,
    )  # fmt: skip
    items = [hit, *rest]
    packed = settle(how.counter, items, 1 + len(rows), how.budget, how.warnings, how.detail,
                    how.total_found, [] if how.associated else None, how.pack_id,
                    how.home)  # fmt: skip
    if not packed.items or packed.items[0].kind != DIGEST:
        return None, frozenset()
    return packed, covered


def _longest(
    digest: digests.Digest,
    fits: Callable[[int], Fits],
    *,
    counter: TokenCounter,
    altitude: str,
    project: str | None,
    detail: str = FULL,
    home: str | None = None,
) -> tuple[int, Hit | None]:
    """The most sentences of `digest` whose item `fits(n)` holds (binary search), its
    `tokens` its own cost."""
    lo, hi = 1, len(digest.sentences)
    best: tuple[int, Hit | None] = (0, None)
    while lo <= hi:
        mid = (lo + hi) // 2
        hit = digest_hit(digest, mid, altitude=altitude, project=project)
        view = item_view(hit, detail=detail, home=home)
        if fits(mid)(view):
            best, lo = (mid, replace(hit, tokens=own_cost(counter, view))), mid + 1
        else:
            hi = mid - 1
    return best
