"""Packing: the whole reply, as the agent receives it, fits the budget."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import timedelta

import pytest

from recall import altitude
from recall.agent import dumps, iso, item_view, pack_view
from recall.digest import Digest, Sentence
from recall.errors import BudgetError
from recall.packing import INDEX, MIN_BUDGET, NOTHING_FITS, NOTHING_FITS_SHORT, pack
from recall.results import ContextPack, age, to_hit
from recall.tokens import ByteEstimate
from tests.recall.conftest import NOW, make_memory, uid

COUNT = ByteEstimate()
SENTENCES = " ".join(f"Sentence number {i} says something useful." for i in range(60))


def ranked(*records):  # type: ignore[no-untyped-def]
    return [(to_hit(r, now=NOW, source="fts", score=1.0), r) for r in records]


def reply(packed, budget: int, detail: str = "full", **more) -> str:  # type: ignore[no-untyped-def]
    pack_ = ContextPack(packed.items, packed.omitted, packed.tokens, budget, packed.warnings,
                        None, detail, **more)  # fmt: skip
    return dumps(pack_view(pack_))


@pytest.mark.parametrize("budget", [50, 200, 1000, 4000])
def test_the_reply_as_sent_fits_and_tokens_counts_it(budget: int):
    records = [make_memory(i, description=f"fact {i}", body=SENTENCES) for i in range(1, 20)]

    packed = pack(ranked(*records), budget=budget, counter=COUNT)

    text = reply(packed, budget)
    assert COUNT.count(text) <= budget
    assert packed.tokens == COUNT.count(text)
    assert packed.omitted == 19 - len(packed.items)


def test_each_item_carries_its_text_and_its_own_cost():
    record = make_memory(1, "abcd", description="a short fact", body="And its body.")

    packed = pack(ranked(record), budget=200, counter=COUNT)

    (item,) = packed.items
    assert item.text == "a short fact\nAnd its body." and not item.truncated
    assert item.tokens is not None and item.tokens < packed.tokens


def test_the_first_item_that_cannot_fit_ends_packing():
    # The second's name alone outgrows what is left: no cut of its text can help.
    small, tiny = make_memory(1, body="x"), make_memory(3)
    big = make_memory(2, "y" * 200, body="y" * 4000)

    packed = pack(ranked(small, big, tiny), budget=120, counter=COUNT, item_tokens=0)

    assert [h.id for h in packed.items] == [small.id]
    assert packed.omitted == 2


@pytest.mark.parametrize(
    ("body", "ends"),
    [
        ("仓库管理员的应急密码保存在保险柜里。" * 80, "里。…"),  # CJK stops, no spaces
        ("y" * 4000, "y…"),  # no place to cut at all: cut anywhere
        ("word " * 50 + "x" * 3000, "word…"),  # one long sentence: a word end
    ],
)
def test_a_text_without_sentence_ends_or_spaces_is_still_cut(body: str, ends: str):
    first = make_memory(1, body=body)

    packed = pack(ranked(first), budget=300, counter=COUNT, item_tokens=200)

    (item,) = packed.items
    assert item.truncated and item.text is not None and item.text.endswith(ends)
    assert (item.tokens or 0) <= 200 and packed.tokens <= 300


def test_a_long_text_is_cut_at_a_sentence_end_to_fill_what_is_left():
    first = make_memory(1, body="Short one.")
    second = make_memory(2, body=SENTENCES)

    packed = pack(ranked(first, second), budget=300, counter=COUNT, item_tokens=0)

    assert [h.id for h in packed.items] == [first.id, second.id]
    cut = packed.items[1]
    assert cut.truncated and cut.text is not None
    assert cut.text.endswith("useful.…") and SENTENCES.startswith(cut.text[:-1])
    assert packed.tokens <= 300


def test_the_item_cap_cuts_long_items_and_packing_goes_on():
    records = [make_memory(i, body=SENTENCES) for i in range(1, 4)]

    packed = pack(ranked(*records), budget=4000, counter=COUNT, item_tokens=200)

    assert len(packed.items) == 3 and all(h.truncated for h in packed.items)
    assert all((h.tokens or 0) <= 200 for h in packed.items)


def test_a_cut_keeps_the_sentence_that_answered_after_a_shorter_head():
    records = [make_memory(i, body=SENTENCES) for i in range(1, 3)]
    asked: list[str] = []

    def focus(record):  # type: ignore[no-untyped-def]
        asked.append(record.id)
        return "Sentence number 41 says something useful." if record.id == records[0].id else None

    packed = pack(ranked(*records), budget=4000, counter=COUNT, item_tokens=200, focus=focus)

    kept, plain = packed.items
    assert kept.text is not None and kept.truncated and (kept.tokens or 0) <= 200
    head, tail = kept.text.split(" … ")
    assert SENTENCES.startswith(head) and head.endswith("useful.")
    assert tail == "Sentence number 41 says something useful. …"  # more follows it
    assert plain.text is not None and "number 41" not in plain.text  # no focus: the head
    assert asked == [r.id for r in records]  # asked only for the items it had to cut
    # A sentence the head already holds, or one not in the text, changes nothing.
    for said in ("Sentence number 2 says something useful.", "Not in the text at all."):
        again = pack(ranked(records[0]), budget=4000, counter=COUNT, item_tokens=200,
                     focus=lambda record, said=said: said)  # fmt: skip
        assert again.items[0].text == plain.text


def test_a_focus_too_long_to_follow_a_head_is_shown_from_its_beginning():
    run = " ".join(f"Step {n} of the long run says to check the ledger." for n in range(80))
    record = make_memory(1, body=f"{SENTENCES} {run} The end.")

    packed = pack(ranked(record), budget=4000, counter=COUNT, item_tokens=200,
                  focus=lambda _: run)  # fmt: skip

    (item,) = packed.items
    assert item.text is not None and item.text.startswith("… Step 0 of the long run")
    assert item.text.endswith("ledger. …") and (item.tokens or 0) <= 200


CODE = "\n".join(f"kubectl rollout restart deploy/api-{n}  # step {n}" for n in range(120))


@pytest.mark.parametrize("fence", ["```", "````", "~~~"])
def test_a_cut_inside_a_code_block_closes_its_fence(fence: str):
    # Cut inside the block: the item ends with the fence closed on its own line, so
    # a reader rendering the text does not take what follows it for code.
    body = f"Restart every api deployment:\n\n{fence}sh\n{CODE}\n{fence}\nDone."
    record = make_memory(1, body=body)

    packed = pack(ranked(record), budget=400, counter=COUNT, item_tokens=200)

    (item,) = packed.items
    assert item.truncated and item.text is not None and (item.tokens or 0) <= 200
    assert item.text.endswith(f"…\n{fence}")
    assert packed.tokens == COUNT.count(reply(packed, 400)) <= 400


def test_a_cut_after_a_closed_code_block_adds_no_fence():
    record = make_memory(1, body=f"Run:\n```sh\nmake test\n```\n{SENTENCES}")

    packed = pack(ranked(record), budget=400, counter=COUNT, item_tokens=200)

    (item,) = packed.items
    assert item.truncated and item.text is not None and item.text.endswith("useful.…")


def test_a_head_cut_inside_code_closes_it_before_the_sentence_that_answered():
    record = make_memory(1, body=f"```\n{CODE}\n```\n{SENTENCES}")

    packed = pack(ranked(record), budget=4000, counter=COUNT, item_tokens=200,
                  focus=lambda _: "Sentence number 41 says something useful.")  # fmt: skip

    (item,) = packed.items
    assert item.text is not None and (item.tokens or 0) <= 200
    head, tail = item.text.split(" …\n```\n")
    assert head.startswith("```\nkubectl") and tail.startswith("Sentence number 41")


def test_a_code_block_that_answered_starts_on_a_line_of_its_own():
    # The block is the passage nearest the query (recall/passages.py reads a fenced
    # block as one): "… ```yaml" inline would be no fence, and the closing one added
    # after the cut would open a block nothing closes.
    yaml = "\n".join(f"widget_setting_{n}: value_{n}  # widget knob {n}" for n in range(90))
    block = f"```yaml\n{yaml}\n```"
    record = make_memory(1, body=f"{SENTENCES}\n{block}\nThat is all.")

    packed = pack(ranked(record), budget=4000, counter=COUNT, item_tokens=200,
                  focus=lambda _: " ".join(block.split()))  # fmt: skip

    (item,) = packed.items
    assert item.text is not None and (item.tokens or 0) <= 200
    assert item.text.startswith("…\n```yaml\nwidget_setting_0: value_0")
    assert item.text.endswith("…\n```") and item.text.count("```") == 2


def test_a_huge_text_is_read_only_as_far_as_a_cut_could_reach():
    # 150 KB: the pack sanitizes and counts only what an item could hold, and a
    # focus from beyond that still follows the head.
    log = " ".join(f"Shift {n}: the engineer checked the queue depth." for n in range(3000))
    record = make_memory(1, body=f"{log} The vault code is kept in the safe.")

    packed = pack(ranked(record), budget=2000, counter=COUNT, item_tokens=500,
                  focus=lambda _: "The vault code is kept in the safe.")  # fmt: skip

    (item,) = packed.items
    assert item.truncated and (item.tokens or 0) <= 500 and item.text is not None
    assert item.text.startswith("Shift 0:")
    assert item.text.endswith("… The vault code is kept in the safe.")  # its last sentence

    after = make_memory(1, body=f"{log} The vault code is kept in the safe. {log}")
    packed = pack(ranked(after), budget=2000, counter=COUNT, item_tokens=500,
                  focus=lambda _: "The vault code is kept in the safe.")  # fmt: skip
    assert (packed.items[0].text or "").endswith("… The vault code is kept in the safe. …")


def test_index_detail_carries_descriptions_not_text():
    record = make_memory(1, description="one line", body=SENTENCES)

    packed = pack(ranked(record), budget=200, counter=COUNT, detail="index")

    view = pack_view(ContextPack(packed.items, 0, packed.tokens, 200, (), None, "index"))
    assert view["items"][0]["description"] == "one line" and "text" not in view["items"][0]


def test_an_index_item_leaves_out_times_attribution_and_worth():
    # A third of an index item's tokens went to fields a list to choose from does
    # not need (memory_read gives them): a small budget listed one item fewer.
    record = make_memory(
        1, description="one line", body=SENTENCES, valid_from=NOW, occurred_at=NOW,
        source="agent", agent_id="claude", session_id="S1",
    )  # fmt: skip
    hits = {
        detail: pack(ranked(record), budget=400, counter=COUNT, detail=detail).items[0]
        for detail in ("full", "index")
    }

    full, index = (item_view(replace(hits[d], worth=0.75), detail=d) for d in ("full", "index"))
    assert {"valid_from", "occurred_at", "attribution", "worth"} <= set(full)
    assert not {"valid_from", "occurred_at", "attribution", "worth"} & set(index)
    assert {"id", "name", "kind", "project", "source", "score", "tokens"} <= set(index)
    assert (hits["index"].tokens or 0) < (hits["full"].tokens or 0)


def test_an_index_item_of_a_past_version_says_when_it_stopped():
    # Asked with history, an archived memory's index item read as a live one.
    past = make_memory(1, description="one line", invalid_at=NOW)

    item = pack(ranked(past), budget=400, counter=COUNT, detail="index").items[0]

    assert item_view(item, detail="index")["invalid_at"] == iso(NOW)
    assert "invalid_at" not in item_view(replace(item, invalid_at=None), detail="index")


def test_nothing_fitting_says_so_within_the_budget():
    record = make_memory(1, "n" * 120, body="z" * 9000)

    packed = pack(ranked(record), budget=MIN_BUDGET, counter=COUNT)

    assert packed.items == () and packed.omitted == 1
    assert len(packed.warnings) == 1 and packed.warnings[0].startswith(NOTHING_FITS)
    assert COUNT.count(reply(packed, MIN_BUDGET)) <= MIN_BUDGET


@pytest.mark.parametrize("budget", range(MIN_BUDGET, 80))
def test_at_every_small_budget_the_warning_keeps_the_budget_it_names(budget: int):
    # Cut from its end to fit, the warning an agent got at budget 50 through the API
    # (a pack id, the total found) was "... nothing was packed (": no figure to ask with.
    record = make_memory(1, "queue-depth", description="Queue depth", body="z " * 4500)
    asked = {"total_found": 12, "pack_id": "01M9525H09BZF84GTHCJRVCSFP"}

    packed = pack(ranked(record), budget=budget, counter=COUNT, **asked)

    assert COUNT.count(reply(packed, budget, **asked)) <= budget
    if packed.items:  # the budget holds the item cut short: nothing to ask for
        assert budget > MIN_BUDGET
        return
    said = re.fullmatch(
        f"(?:{re.escape(NOTHING_FITS)}|{re.escape(NOTHING_FITS_SHORT)})"
        r" (\d+) \((\d+) with detail 'index'\)",
        packed.warnings[0],
    )
    assert said is not None, packed.warnings
    assert int(said.group(1)) > budget and int(said.group(2)) < int(said.group(1))


@pytest.mark.parametrize("budget", range(MIN_BUDGET, 80))
def test_at_every_small_budget_another_warning_gives_way_to_the_figure(budget: int):
    # A digest altitude at budget 50 said "altitude scope: the dige" and "nothing
    # packed: needs a": both cut mid-word, the budget to ask with lost.
    record = make_memory(1, "queue-depth", description="Queue depth", body="z " * 4500)
    asked = {"total_found": 12, "pack_id": "01M9525H09BZF84GTHCJRVCSFP"}
    other = "altitude scope: the digest predates the latest changes (being rebuilt)"

    packed = pack(ranked(record), budget=budget, counter=COUNT, warnings=[other], **asked)

    assert COUNT.count(reply(packed, budget, **asked)) <= budget
    for said in packed.warnings:  # whole, or cut at a word's end with an ellipsis
        if said.startswith((NOTHING_FITS, NOTHING_FITS_SHORT)) or said == other:
            continue
        kept = said.removesuffix("…")
        assert said.endswith("…") and other.startswith(kept), said
        assert other[len(kept)] in " ,;:(", said  # not inside a word
    if not packed.items:
        figures = [w for w in packed.warnings if re.search(r"needs a budget of \d+", w)]
        assert figures, packed.warnings


def test_nothing_fitting_names_the_budget_that_would_hold_the_best_hit():
    # At 100 tokens an agent got "exceeds the token budget" and no way to know what
    # to ask for: the envelope and an item's fields take more than that.
    record = make_memory(
        1, "queue-depth", description="Queue depth", body="z " * 4500, occurred_at=NOW,
        valid_from=NOW, source="agent_observed", agent_id="ops-agent", session_id="ops:S1",
    )  # fmt: skip

    packed = pack(ranked(record), budget=70, counter=COUNT)

    assert packed.items == ()
    said = re.fullmatch(
        re.escape(NOTHING_FITS) + r" (\d+) \((\d+) with detail 'index'\)",
        packed.warnings[0],
    )
    assert said is not None, packed.warnings
    full, index = int(said.group(1)), int(said.group(2))
    assert full > 70 and index < full
    assert len(pack(ranked(record), budget=full, counter=COUNT).items) == 1
    assert len(pack(ranked(record), budget=index, counter=COUNT, detail=INDEX).items) == 1
    assert pack(ranked(record), budget=index - 5, counter=COUNT, detail=INDEX).items == ()


def test_long_warnings_are_shortened_rather_than_breaking_the_budget():
    warnings = ("semantic channel skipped: index unavailable (" + "detail " * 40 + ")",) * 3

    packed = pack([], budget=MIN_BUDGET, counter=COUNT, warnings=warnings)

    assert COUNT.count(reply(packed, MIN_BUDGET)) <= MIN_BUDGET
    assert all(w.startswith("semantic channel skipped") for w in packed.warnings)


def test_a_budget_below_the_envelope_is_refused():
    with pytest.raises(BudgetError, match="at least 50"):
        pack([], budget=49, counter=COUNT)


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0, "now"),
        (59, "now"),
        (60, "1min"),
        (3599, "59min"),
        (7200, "2h"),
        (86400 * 3, "3d"),
        (86400 * 40, "1mo"),
    ],
)
def test_an_age_under_a_minute_is_now_not_zero_minutes(seconds: int, shown: str):
    assert age(NOW - timedelta(seconds=seconds), NOW) == shown


@pytest.mark.parametrize("others", [0, 9, 99])
@pytest.mark.parametrize("words", [3, 12, 40])
def test_the_budget_a_nothing_fits_warning_names_is_the_least_that_holds_an_item(
    others: int, words: int
):
    # An agent walk: the figure was an estimate a token or two short ("about 110";
    # at 110 nothing again, "about 111"), the reply's own figures left out of it.
    first = make_memory(1, "stripe-api-version", description=" ".join(["pinned"] * words),
                        body="Pinned to 2024-06-20. " * 20)  # fmt: skip
    rest = [make_memory(n, f"other-{n}", description="other") for n in range(2, others + 2)]
    found = ranked(first, *rest)

    packed = pack(found, budget=MIN_BUDGET, counter=COUNT, total_found=others + 1)
    said = re.fullmatch(
        re.escape(NOTHING_FITS) + r" (\d+)(?: \((\d+) with detail 'index'\))?",
        packed.warnings[0],
    )

    assert packed.items == () and said is not None, packed.warnings
    for figure, detail in ((said.group(1), "full"), (said.group(2), INDEX)):
        if figure is None:
            continue
        least = int(figure)
        at = pack(found, budget=least, counter=COUNT, detail=detail, total_found=others + 1)
        below = pack(found, budget=least - 1, counter=COUNT, detail=detail, total_found=others + 1)
        assert len(at.items) >= 1 and below.items == (), (detail, least)


def test_a_text_cut_short_ends_at_a_word_where_one_ends_near_the_least_cut():
    # An agent walk got "Stripe retries webhooks f…": a word end under MIN_TEXT_CHARS
    # (24) was no place to cut, so a budget a word short of "for" cut inside it, or
    # packed nothing; every cut here ends a word, the shortest too.
    text = "Stripe retries webhooks for three days with exponential backoff"
    record = make_memory(1, "stripe-webhook-retries", description=text, body="")
    cuts = set()
    for budget in range(MIN_BUDGET, 200):
        packed = pack(ranked(record), budget=budget, counter=COUNT, total_found=7)
        for item in packed.items:
            if item.truncated and item.text is not None:
                shown = item.text.removesuffix("…")
                assert text.startswith(shown) and text[len(shown)] == " ", item.text
                cuts.add(item.text)
    assert "Stripe retries webhooks…" in cuts


def test_no_cut_ends_in_a_code_block_it_has_just_opened():
    # A runbook read at 160 tokens ended "```bash…\n```": cut after the line opening
    # the block, the block was empty and its language read "bash…".
    body = "Mind the freeze.\n\n```bash\ngit tag -a billing-1 -m 'release'\ngit push --tags\n```\n"
    record = make_memory(1, "deploy-billing", description="Deploy billing", body=body)
    seen = set()
    for budget in range(MIN_BUDGET, 400):
        for item in pack(ranked(record), budget=budget, counter=COUNT).items:
            assert "```bash…" not in (item.text or ""), (budget, item.text)
            seen.add(item.text)
    assert any(t and t.endswith("freeze.…") for t in seen), seen  # cut before the block


def test_a_small_budget_holds_a_memory_whose_pack_says_its_project_once():
    # The demo's webhook gotcha (a 214-character text) at budget 100 over MCP: "nothing
    # packed: the best hit needs a budget of 101", as its item's fields took 69 tokens.
    # Its kind, source, worth and project (the pack's) now go unsaid, and it comes.
    record = make_memory(
        1, "stripe-webhook-idempotency", kind="gotcha", source="user_stated",
        description="Stripe retries webhooks for 3 days: the same event can arrive many times.",
        body="We once double-credited 41 invoices after a slow deploy made Stripe retry.\n"
        "Store the event id before acting on it; see [[idempotency-keys]].",
        valid_from=NOW - timedelta(days=30),
    )  # fmt: skip
    hit = to_hit(record, now=NOW, source="fused", score=1.0415)
    pack_id = "01K0000000000000000000PACK"

    packed = pack([(hit, record)], budget=100, counter=COUNT, pack_id=pack_id, home="alpha")

    assert packed.items and packed.items[0].text, packed.warnings
    text = reply(packed, 100, pack_id=pack_id, project="alpha")
    assert packed.tokens == COUNT.count(text) <= 100
    sent = json.loads(text)
    assert sent["project"] == "alpha" and "project" not in sent["items"][0]
    assert sent["items"][0]["tokens"] == packed.items[0].tokens


@pytest.mark.parametrize("found_", [7, 12, 123, 1234])
@pytest.mark.parametrize("words", [4, 9])
def test_both_figures_are_exact_when_the_budget_asked_has_more_digits(words: int, found_: int):
    # An agent walk (demo, "deploy rollback"): asked at 101, "needs a budget of 102 (92
    # with detail 'index')", and detail index at 91 held the item. The estimate counted
    # the envelope as asked ("budget":101, two bytes more than at 91), and the search
    # for the least went only up from it: a token high where those bytes began one.
    record = make_memory(1, "deploy-rollback", description=" ".join(["rollback"] * words),
                         body="Roll back with the previous image tag. " * 20, valid_from=NOW,
                         source="agent_observed", agent_id="ops-agent")  # fmt: skip
    found, asked = ranked(record), {"total_found": found_, "pack_id": "01M9525H09BZF84GTHCJRVCSFP"}
    told = 0

    for budget in range(90, 130):  # from 100 before items said `kind` (7 bytes less)
        packed = pack(found, budget=budget, counter=COUNT, **asked)
        if packed.items:
            break
        said = re.search(r"needs a budget of (\d+)(?: \((\d+) with detail 'index'\))?",
                         packed.warnings[0])  # fmt: skip
        assert said is not None, packed.warnings
        for figure, detail in ((said.group(1), "full"), (said.group(2), INDEX)):
            if figure is None:
                continue
            least, told = int(figure), told + 1
            at = pack(found, budget=least, counter=COUNT, detail=detail, **asked)
            below = pack(found, budget=least - 1, counter=COUNT, detail=detail, **asked)
            assert at.items and not below.items, (budget, detail, least)
    assert told, "no budget from 90 held nothing: the case is not tested"


@pytest.mark.parametrize("n", [1, 2, 5])
def test_items_are_packed_whole_exactly_when_their_reply_fits(n: int):
    # An item was sized as though its `tokens` said 99,999 and the envelope's figures
    # were at their widest: a reply of exactly the budget asked lost its last item, or
    # had it cut, at nearly every budget.
    exact = 0
    for extra in range(12):
        records = [
            make_memory(i, description=f"fact {i}", body="A short body. " + "x" * (extra + i))
            for i in range(1, n + 1)
        ]
        roomy = pack(ranked(*records), budget=999, counter=COUNT)
        assert len(roomy.items) == n and not any(h.truncated for h in roomy.items)
        for budget in range(max(MIN_BUDGET, roomy.tokens - 6), roomy.tokens + 3):
            needs = COUNT.count(reply(replace(roomy, tokens=budget, omitted=0), budget))
            exact += needs == budget

            packed = pack(ranked(*records), budget=budget, counter=COUNT)

            assert (packed.items == roomy.items) == (needs <= budget), (extra, budget, needs)
            assert COUNT.count(reply(packed, budget)) == packed.tokens <= budget
    assert exact >= 6  # replies of exactly the budget asked were among them


def digested(digest: Digest, records, budget: int):  # type: ignore[no-untyped-def]
    """A scope recall's pack: `digest` ahead of the rows of `records` it does not cover
    (None: not even its first sentence fits)."""
    how = altitude.Packing(budget=budget, counter=COUNT)
    packed, _ = altitude.with_digest(
        digest, ranked(*records), altitude="scope", project="alpha", how=how
    )
    assert packed is None or packed.items[0].kind == "digest"
    return packed


@pytest.mark.parametrize("n", [1, 2, 5])
def test_rows_after_a_digest_are_packed_whole_exactly_when_their_reply_fits(n: int):
    # The rows after a project digest were sized by the summed estimate (each count
    # rounded up, the envelope's figures at their widest): a row whose whole reply was
    # exactly the budget asked was left out or cut there, as on the items path before.
    digest = Digest("alpha", (Sentence("Warm the cache before traffic.", uid(99), (uid(99),)),))
    exact = 0
    for extra in range(12):
        records = [
            make_memory(i, description=f"fact {i}", body="A short body. " + "x" * (extra + i))
            for i in range(1, n + 1)
        ]
        roomy = digested(digest, records, 999)
        assert (
            roomy is not None
            and len(roomy.items) == n + 1
            and not any(h.truncated for h in roomy.items)
        )
        for budget in range(roomy.tokens - 6, roomy.tokens + 3):
            needs = COUNT.count(reply(replace(roomy, tokens=budget, omitted=0), budget))
            exact += needs == budget

            packed = digested(digest, records, budget)

            assert packed is not None and (packed.items == roomy.items) == (needs <= budget), (
                extra,
                budget,
                needs,
            )
            assert COUNT.count(reply(packed, budget)) == packed.tokens <= budget
    assert exact >= 6  # replies of exactly the budget asked were among them


def test_a_digest_keeps_every_sentence_its_reply_holds():
    # Its sentences were counted by the summed estimate too: at a budget its reply of n
    # sentences fitted exactly, the digest came with fewer (157 of 280 such probes).
    exact = 0
    for extra in range(8):
        said = tuple(
            Sentence(f"Sentence {i} says {'x' * ((extra * 7 + i) % 13)}.", uid(i), (uid(i),))
            for i in range(1, 8)
        )
        for n in range(1, len(said) + 1):
            roomy = digested(Digest("alpha", said[:n]), [], 999)
            assert roomy is not None
            for budget in range(roomy.tokens - 4, roomy.tokens + 2):
                needs = COUNT.count(reply(replace(roomy, tokens=budget), budget))
                exact += needs == budget

                packed = digested(Digest("alpha", said), [], budget)

                kept = len((packed.items[0].text or "").split("\n")) if packed else 0
                assert (kept >= n) == (needs <= budget), (extra, n, budget, needs, kept)
                assert not packed or COUNT.count(reply(packed, budget)) == packed.tokens <= budget
    assert exact >= 6


def test_an_items_tokens_count_its_json_as_sent():
    # Its figure counted its view with "tokens":99999: a token more than it sends.
    records = [make_memory(i, description=f"fact {i}", body=SENTENCES[: 40 * i]) for i in (1, 2, 3)]

    packed = pack(ranked(*records), budget=400, counter=COUNT, item_tokens=60)

    sent = json.loads(reply(packed, 400))["items"]
    assert [COUNT.count(dumps(view) + ",") for view in sent] == [h.tokens for h in packed.items]


def test_a_cut_is_the_longest_the_whole_reply_holds():
    # Sized with a stand-in figure, a cut stopped a word or two short of the budget.
    words = [f"word{i}" for i in range(400)]
    record = make_memory(1, description="", body=" ".join(words))
    for budget in range(70, 160):
        packed = pack(ranked(record), budget=budget, counter=COUNT)

        (item,) = packed.items
        shown = (item.text or "").removesuffix("…").split(" ")
        assert item.truncated and shown == words[: len(shown)], budget
        longer = replace(item, text=" ".join(words[: len(shown) + 1]) + "…")
        longer = replace(longer, tokens=COUNT.count(dumps(item_view(longer)) + ","))
        over = replace(packed, items=(longer,), tokens=budget)
        assert COUNT.count(reply(over, budget)) > budget, (budget, item.text)


DEPLOY = make_memory(
    1, "deploy-billing", kind="runbook", source="user_stated", valid_from=NOW,
    description="Deploy the billing API: tag, wait for CI, promote, watch the dashboards.",
    body="Tag the release, wait for CI to pass, promote to production, then watch the "
    "dashboards for ten minutes. " * 4,
)  # fmt: skip


@pytest.mark.parametrize("budget", range(MIN_BUDGET, 72))
def test_an_empty_pack_always_gives_the_least_budget_its_best_hit_needs(budget: int):
    # The demo's recall (a pack id, its project, associated asked) at budgets 50 to 55
    # said "nothing packed: needs…": the figures were cut with the words.
    asked = {"total_found": 28, "pack_id": "01M983CF51Q4X7M0FDCWKA5QMB", "home": "alpha"}
    found = ranked(DEPLOY)

    packed = pack(found, budget=budget, counter=COUNT, associated=True, **asked)

    more = {"total_found": 28, "pack_id": asked["pack_id"], "project": "alpha", "associated": ()}
    assert COUNT.count(reply(packed, budget, **more)) == packed.tokens <= budget
    if packed.items:
        return
    said = re.search(r"needs a budget of (\d+)", " ".join(packed.warnings))
    assert said is not None, packed.warnings
    least = int(said.group(1))
    assert pack(found, budget=least, counter=COUNT, associated=True, **asked).items
    assert not pack(found, budget=least - 1, counter=COUNT, associated=True, **asked).items


def test_an_empty_pack_leaves_out_its_project_so_the_figure_fits():
    # A 64-letter project, a pack id and associated at 50: with the project said in the
    # envelope not even "needs a budget of N" fitted, and the recall was refused.
    asked = {"total_found": 28, "pack_id": "01M983CF51Q4X7M0FDCWKA5QMB", "associated": True}
    home = "p" * 64
    found = [(replace(h, project=home), replace(r, project=home)) for h, r in ranked(DEPLOY)]

    packed = pack(found, budget=MIN_BUDGET, counter=COUNT, home=home, **asked)

    assert not packed.items
    sent = reply(packed, MIN_BUDGET, total_found=28, pack_id=asked["pack_id"], project=home,
                 associated=())  # fmt: skip
    assert COUNT.count(sent) == packed.tokens <= MIN_BUDGET
    assert home not in sent
    least = int(re.findall(r"needs a budget of (\d+)", " ".join(packed.warnings))[0])
    assert pack(found, budget=least, counter=COUNT, home=home, **asked).items
    assert not pack(found, budget=least - 1, counter=COUNT, home=home, **asked).items
