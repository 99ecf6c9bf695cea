"""Issue 18, the console's second pass: one browser test per finding (1-12).

Each test drives Debian's Chromium the way a person would and checks what
the issue found wrong: noise and silence in Search, an unreadable relevance
bar, an inspector only an engineer could read, sideways scrolling on a
phone, no browsing, broken history, no loading feedback, lost focus, palette
gaps, markdown in snippets, raw settings, and dead ends.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import User

from console import services
from console.models import Memory, Project, RetrievalEvent
from tests.browser.conftest import PHONE, axe, log_in, overflow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WEBHOOK_BODY = """## Why

Stripe retries a webhook for three days when we answer slowly, so the same
event can arrive many times.

```python
def handle(event):
    if seen(event.id):
        return
```

The handler stores the event id before acting, see [[idempotency-keys]] and
**never** trusts the order of delivery. Retries stop after a 2xx answer.
"""
CODE_BODY = (
    "Run the rollback from the deploy host:\n\n```sh\n"
    "kubectl --context production-eu-west-1 -n billing rollout undo deployment/billing-api"
    " --to-revision=$(kubectl -n billing rollout history deployment/billing-api | tail -2)\n"
    "```\n\nThen watch the error rate on the billing dashboard until it settles back under"
    " the usual baseline, which normally takes a few minutes after the pods restart.\n"
)
CHAT = [
    "Joanna: Bye Nate!",
    "Nate: I love DIYs, painting and fixing old furniture.",
    "Joanna: They just sent me a generic rejection letter.",
    "Nate: See you tomorrow, take care!",
]


def world(filler: int = 0) -> dict[str, Memory]:
    """Deploy memories, a chat log as noise, an archived match, optional filler."""
    billing = services.project_create(
        slug="billing-api",
        name="Billing API",
        description="Invoices, payments and the Stripe webhook consumer "
        "(Django, Postgres, Celery, Redis, Kubernetes, Terraform, Grafana dashboards).",
    )
    chat = services.project_create(slug="conv-42", name="Chat log")
    rows = [
        (billing, "runbook", "deploy-billing", "Deploy the billing API: tag, wait for CI, promote",
         "Tag the release, wait for CI, then promote the image.", ["deploy", "release"]),
        (None, "constraint", "deploy-freeze-fridays", "No prod deploys after 15:00 on Fridays",
         "Ship on Monday instead.", ["deploy"]),
        (billing, "runbook", "rollback-billing", "Roll back billing: promote the previous image",
         CODE_BODY, ["deploy", "rollback"]),
        (billing, "gotcha", "stripe-webhook-retries", "Stripe retries webhooks for three days",
         WEBHOOK_BODY, ["stripe"]),
        (billing, "convention", "idempotency-keys", "Every POST carries an idempotency key",
         "Keys live 24 hours in Redis.", ["stripe"]),
        (billing, "decision", "legacy-deploy-script", "The old deploy script pushed to prod",
         "Replaced by the CI pipeline.", ["deploy"]),
    ]  # fmt: skip
    out: dict[str, Memory] = {}
    for project, kind, name, description, body, tags in rows:
        out[name] = services.memory_create(
            project=project, kind=kind, name=name, description=description, body=body, tags=tags
        )
    for n, line in enumerate(CHAT):
        out[f"chat-{n}"] = services.memory_create(
            project=chat, kind="episode", name=f"turn-{n}", description=line, body=line
        )
    for n in range(filler):
        out[f"filler-{n}"] = services.memory_create(
            project=billing,
            kind="fact" if n % 3 else "reference",
            name=f"invoice-fact-{n:02d}",
            description=f"Invoice rule number {n}: totals round half up per line",
            body=f"Invoices round each line half up; rule {n} of the ledger.",
            tags=["invoices"],
            importance=round(0.1 + (n % 9) / 10, 2),
        )
    services.memory_archive(memory=out["legacy-deploy-script"])
    services.favorite_toggle(item=out["deploy-billing"], value=True)
    return out


def titles(page: Any) -> list[str]:
    return page.locator("#results .hit-title").all_inner_texts()


def search(page: Any, query: str) -> None:
    """Type into the Search page's box and wait for the answer to `query`."""
    page.fill("#id_q", query)
    answered(page, query)


def answered(page: Any, query: str) -> None:
    """Wait until the address holds `query` and no request is in flight."""
    page.wait_for_function(
        "q => new URLSearchParams(location.search).get('q') === q"
        " && !document.querySelector('.htmx-request')",
        arg=query,
    )


# 1 --------------------------------------------------------------------------------


def test_1_search_reads_the_last_word_as_a_prefix_drops_noise_and_says_no_results(
    page: Any, user: User
) -> None:
    world()
    log_in(page, user)

    search(page, "dep")
    found = titles(page)
    assert "deploy-billing" in found, found
    assert not any(t.startswith("turn-") for t in found), f"chat noise for 'dep': {found}"

    search(page, "zzqxv blorp")
    assert titles(page) == []
    empty = page.locator("#results .empty").inner_text()
    assert "No results for “zzqxv blorp”" in empty
    assert page.locator("#results .suggestions a").count() >= 1


def test_1_the_empty_state_offers_to_drop_a_filter_and_include_archived(
    page: Any, user: User
) -> None:
    world()
    log_in(page, user)
    page.goto("/?q=legacy+script&project=conv-42&semantic=false")

    suggestions = page.locator("#results .suggestions").inner_text()
    assert "all projects" in suggestions
    page.goto("/?q=legacy+script&semantic=false")
    hint = page.locator("#results .suggestions").inner_text()
    assert "Include archived (1)" in hint
    page.click("#results .suggestions >> text=Include archived")
    page.wait_for_selector("#results .hit")
    assert titles(page) == ["legacy-deploy-script"]


# 2 --------------------------------------------------------------------------------

TIERS = {"Exact match": 4, "Strong match": 3, "Good match": 2, "Weak match": 1}


def test_2_relevance_is_one_label_in_words_that_follows_rank_order(page: Any, user: User) -> None:
    world()
    log_in(page, user)
    search(page, "stripe webhook")

    labels = page.locator("#results .hit .relevance").all_inner_texts()
    assert labels and len(labels) == len(titles(page))
    assert set(labels) <= set(TIERS), labels
    tiers = [TIERS[label] for label in labels]
    assert tiers == sorted(tiers, reverse=True), f"labels out of rank order: {labels}"
    assert titles(page)[0] == "stripe-webhook-retries"
    assert labels[0] == "Strong match"
    assert page.locator("#results .sim-track").count() == 0  # no bar that reads as relevance
    first = page.locator("#results .hit").first
    first.locator("details.why summary").click()
    assert "full text" in first.locator("details.why").inner_text().lower()


# 3 --------------------------------------------------------------------------------


def test_3_the_inspector_shows_text_dates_and_why_and_warns_without_a_project(
    page: Any, user: User
) -> None:
    world()
    log_in(page, user)
    page.goto("/inspect/")
    page.fill("#id_query", "stripe webhooks")
    page.click(".inspect-form button[type=submit]")
    page.wait_for_selector("#inspect-result .inspect-warning")
    assert "No project chosen" in page.locator(".inspect-warning").inner_text()

    page.select_option("#id_project", "billing-api")
    page.click(".inspect-form button[type=submit]")
    page.wait_for_url("**project=billing-api**")
    page.wait_for_selector("#inspect-result .inspect-item")
    assert page.locator("#inspect-result .inspect-warning").count() == 0
    item = page.locator(".inspect-item").first
    assert "Stripe retries" in item.locator(".item-text").inner_text()
    assert item.locator(".item-dates time").count() >= 1
    why = item.locator(".why").inner_text()
    assert "words" in why or "meaning" in why, why
    assert "3y" not in item.inner_text() and "0.0" not in item.locator(".why").inner_text()

    page.check("#id_mode_1")  # briefing, with the query and no subagent type
    page.fill("#id_query", "stripe retries webhooks for three days")
    page.click(".inspect-form button[type=submit]")
    page.wait_for_selector("[data-briefing]")
    briefing = page.locator("[data-briefing]").inner_text()
    assert "RELEVANT" in briefing and "stripe-webhook-retries" in briefing, briefing


# 4 --------------------------------------------------------------------------------


def test_4_no_page_scrolls_sideways_on_a_phone(page: Any, user: User) -> None:
    memories = world()
    log_in(page, user)
    page.set_viewport_size(PHONE)
    code = memories["rollback-billing"]
    # A 60-letter tag: the Tag filter's select and the tag in a row were that wide.
    services.memory_create(
        project=code.project, kind="fact", name="long-tagged", description="d", tags=["y" * 60]
    )
    urls = [
        f"/memories/{code.pk}/",
        "/projects/",
        "/projects/billing-api/",
        "/?q=deploy",
        "/settings/",
        "/inspect/?mode=recall&query=deploy&project=billing-api",
        f"/memories/{code.pk}/revisions/",
    ]
    for url in urls:
        page.goto(url)
        assert overflow(page) == 0, f"{url} is {overflow(page)} px wider than the phone"
        hidden = page.evaluate(  # a table squeezed into a scrolling box hides columns
            "() => Math.max(0, ...[...document.querySelectorAll('.table-wrap')]"
            ".map(w => w.scrollWidth - w.clientWidth))"
        )
        assert hidden == 0, f"{url}: a table scrolls {hidden} px sideways on the phone"
    page.goto(f"/memories/{code.pk}/")
    right = page.evaluate(
        "() => Math.max(...[...document.querySelectorAll('.markdown p')]"
        ".map(p => p.getBoundingClientRect().right))"
    )
    assert right <= PHONE["width"], f"paragraph text runs to {right} px"


def test_4_a_long_unbroken_name_wraps_wherever_it_is_quoted_on_a_phone(
    page: Any, user: User
) -> None:
    # Agents write names like payroll.nightly_reconciliation_job.schedule_v2: the
    # message after a save, the delete confirmation, an old version's "Superseded by"
    # and the search page's and palette's "no results" lines ran off a phone.
    memories = world()
    log_in(page, user)
    page.set_viewport_size(PHONE)
    code = memories["rollback-billing"]
    name = "payroll.nightly_reconciliation_job.schedule_v2_" + "x" * 40
    old = services.memory_create(project=code.project, kind="fact", name=name, description="d")
    newer = services.memory_supersede(memory=old, name=name + "_v3", description="d2")

    page.goto(f"/memories/{newer.pk}/edit/")
    page.click("form button.primary")
    page.wait_for_selector("#messages .msg")
    assert overflow(page) == 0, f"the message after a save is {overflow(page)} px too wide"
    page.click("[data-focus-key=delete]")
    page.wait_for_selector(".confirm")
    assert overflow(page) == 0, f"the delete confirmation is {overflow(page)} px too wide"
    for url in (f"/memories/{old.pk}/", "/?q=" + "a" * 80, "/palette/?q=" + "x" * 80):
        page.goto(url)
        assert overflow(page) == 0, f"{url} is {overflow(page)} px wider than the phone"


# 5 --------------------------------------------------------------------------------


def test_5_browse_a_project_with_sort_filters_counts_and_pages(page: Any, user: User) -> None:
    world(filler=30)
    log_in(page, user)
    page.goto("/projects/")
    page.click("#projects >> text=billing-api")
    page.wait_for_url("**/projects/billing-api/")
    assert page.locator("#browse .hit").count() == 25
    assert "1–25 of 34" in page.locator("#browse .count").inner_text()

    page.select_option("#id_kind", "runbook")
    page.wait_for_function("() => document.querySelectorAll('#browse .hit').length === 2")
    assert "runbook (2)" in page.locator("#id_kind").inner_text()
    page.select_option("#id_kind", "")
    page.select_option("#id_sort", "name")
    page.wait_for_function(
        "() => document.querySelector('#browse .hit-title').textContent === 'deploy-billing'"
    )
    page.click("#browse a[rel=next]")
    page.wait_for_function("() => document.querySelectorAll('#browse .hit').length === 9")
    assert "26–34 of 34" in page.locator("#browse .count").inner_text()

    page.check("#id_archived")
    page.wait_for_function(
        "() => document.querySelector('#browse .count').textContent.includes('of 35')"
    )

    search_url = "/?q=invoice&semantic=false"
    page.goto(search_url)
    assert "of 30" in page.locator("#results .count").inner_text()
    page.click("#results a[rel=next]")
    page.wait_for_function(
        "() => document.querySelector('#results .count').textContent.includes('21–30')"
    )


# 6 --------------------------------------------------------------------------------


def test_6_typing_is_one_history_entry_and_back_restores_box_results_and_scroll(
    page: Any, user: User
) -> None:
    world(filler=30)
    log_in(page, user)
    page.set_viewport_size({"width": 1440, "height": 500})
    page.goto("/favorites/")
    page.click("nav >> text=Search")
    page.wait_for_selector("#id_q")
    before = page.evaluate("history.length")
    page.locator("#id_q").press_sequentially("invoice", delay=40)
    answered(page, "invoice")
    assert page.evaluate("history.length") == before, "a history entry per keystroke"
    assert parse_qs(urlsplit(page.url).query)["q"] == ["invoice"]

    last = page.locator("#results .hit-title").nth(15)
    last.scroll_into_view_if_needed()
    scrolled = page.evaluate("window.scrollY")
    assert scrolled > 200
    name = last.inner_text()
    last.click()
    page.wait_for_url("**/memories/**")
    page.go_back()
    page.wait_for_selector("#results .hit")
    assert page.input_value("#id_q") == "invoice"
    assert "invoice" in page.locator("#results .count").inner_text()
    page.wait_for_function(f"() => Math.abs(window.scrollY - {scrolled}) < 80")
    assert page.evaluate("document.activeElement.textContent") == name
    page.go_back()
    page.wait_for_url("**/favorites/")


# 7 --------------------------------------------------------------------------------

SLOW_XHR = """() => {
  const send = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function (...args) {
    setTimeout(() => send.apply(this, args), 1500);
  };
}"""


def test_7_a_slow_search_says_it_is_searching(page: Any, user: User) -> None:
    world()
    log_in(page, user)
    page.evaluate(SLOW_XHR)
    page.fill("#id_q", "stripe")
    status = page.locator("#search-status")
    status.wait_for(state="visible", timeout=1000)
    assert "Searching" in status.inner_text()
    assert page.locator("#results").get_attribute("aria-busy") == "true"
    assert page.locator("#results").inner_text().find("Type to search") < 0
    page.wait_for_selector("#results .hit")
    status.wait_for(state="hidden")


# 8 --------------------------------------------------------------------------------


def test_8_focus_stays_with_the_action_after_star_archive_and_a_failed_save(
    page: Any, user: User
) -> None:
    memory = world()["idempotency-keys"]
    log_in(page, user)
    page.goto(f"/memories/{memory.pk}/")

    page.focus("#memory-head .star")
    page.keyboard.press("Enter")
    page.wait_for_selector('#memory-head .star[aria-pressed="true"]')
    page.wait_for_function("() => document.activeElement.classList.contains('star')")

    page.focus("#actions >> text=Archive")
    page.keyboard.press("Enter")
    page.wait_for_selector("#actions >> text=Restore")
    page.wait_for_function("() => document.activeElement.textContent.trim() === 'Restore'")

    page.goto(f"/memories/{memory.pk}/edit/")
    page.fill("#id_name", "Not A Slug")
    page.fill("#id_importance", "7")
    page.click("#memory-form button[type=submit]")
    page.wait_for_selector(".field-error")
    page.wait_for_function("() => document.activeElement.id === 'id_name'")
    header = page.locator("header.top").bounding_box()
    label = page.locator("label[for=id_name]").bounding_box()
    assert label["y"] >= header["y"] + header["height"], "the label hides under the header"


# 9 --------------------------------------------------------------------------------


def test_9_palette_recents_commands_one_highlight_a_close_button_and_valid_markup(
    page: Any, user: User
) -> None:
    memory = world()["stripe-webhook-retries"]
    log_in(page, user)
    page.goto(f"/memories/{memory.pk}/")
    page.keyboard.press("Control+k")
    options = page.locator("#palette-results [role=option]")
    options.first.wait_for()
    text = page.locator("#palette-results").inner_text()
    assert "stripe-webhook-retries" in text  # a recent item
    for command in ("Go to Favorites", "New memory", "Toggle theme"):
        assert command in text, text

    page.keyboard.type("stri")
    page.wait_for_function("() => document.getElementById('palette-results').dataset.q === 'stri'")
    page.keyboard.press("Tab")
    highlighted = page.evaluate(
        "() => [...document.querySelectorAll('#palette-results [role=option]')]"
        ".filter(o => o.classList.contains('selected') || o === document.activeElement).length"
    )
    assert highlighted <= 1, f"{highlighted} rows highlighted after Tab"
    assert axe(page) == []

    page.set_viewport_size(PHONE)
    close = page.locator("#palette-close")
    assert close.is_visible()
    close.click()
    assert not page.locator("#palette").is_visible()

    page.keyboard.press("Control+k")
    page.keyboard.type("theme")
    page.locator("#palette-results [role=option] >> text=Toggle theme").click()
    assert page.evaluate("document.documentElement.dataset.theme") in ("dark", "light")


# 10 -------------------------------------------------------------------------------


def test_10_snippets_are_plain_sentences_around_the_match_and_titles_highlight(
    page: Any, user: User
) -> None:
    world()
    log_in(page, user)
    page.goto("/?q=handler+stores&semantic=false")
    hit = page.locator("#results .hit").first
    snippet = hit.locator(".snippet").inner_text()
    assert "[[" not in snippet and "```" not in snippet and "**" not in snippet, snippet
    assert snippet.startswith("The handler stores the event id"), snippet
    assert hit.locator(".snippet mark").count() >= 2

    page.goto("/?q=webhook&semantic=false")
    first = page.locator("#results .hit").first
    assert first.locator(".hit-title mark").count() == 1
    assert "webhook" in first.locator(".hit-title mark").inner_text().lower()


# 11 -------------------------------------------------------------------------------


def test_11_settings_speak_plainly_with_help_and_errors_at_the_field(page: Any, user: User) -> None:
    world()
    log_in(page, user)
    page.goto("/settings/")
    label = page.locator("label[for=id_search_config-semantic_floor]").inner_text()
    assert "semantic_floor" not in label and "semantic floor" not in label.lower(), label
    row = page.locator("#section-search_config tr", has=page.locator("#id_search_config-k"))
    assert row.locator(".knob-help").inner_text().strip()
    helps = page.locator("#section-briefing_config .knob-help")
    assert helps.count() == page.locator("#section-briefing_config tbody tr").count()

    page.fill("#id_briefing_config-budget", "0")
    error = page.locator("#err-briefing_config-budget")
    error.wait_for(state="visible")
    assert "budget" in error.inner_text().lower() or "1" in error.inner_text()
    page.wait_for_function("() => !document.querySelector('#preview [data-briefing]')")
    assert "fix" in page.locator("#preview").inner_text().lower()
    invalid = page.get_attribute("#id_briefing_config-budget", "aria-invalid")
    assert invalid == "true"


# 12 -------------------------------------------------------------------------------


def test_12_dead_ends_are_styled_pages_and_a_deleted_memory_stays_deleted(
    page: Any, user: User
) -> None:
    memory = world()["idempotency-keys"]
    log_in(page, user)
    page.emulate_media(color_scheme="dark")
    response = page.goto("/memories/01NOPE0000000000000000000/")
    assert response.status == 404
    assert page.locator("nav.nav").count() == 1
    assert "not found" in page.locator("h1").inner_text().lower()
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background != "rgb(255, 255, 255)" and background != "rgba(0, 0, 0, 0)", background
    page.emulate_media(color_scheme="light")

    shown = page.goto(f"/memories/{memory.pk}/")
    assert "no-store" in shown.headers.get("cache-control", "")
    page.click("#actions >> text=Delete…")
    page.click("#confirm-slot >> text=Delete for good")
    page.wait_for_url(lambda url: urlsplit(url).path == "/")
    page.go_back()
    page.wait_for_load_state()
    assert page.locator("#memory-head .badge.ok").count() == 0, "the deleted memory shows active"
    assert "not found" in page.locator("h1").inner_text().lower()
    assert not Memory.objects.filter(pk=memory.pk).exists()
    assert Project.objects.filter(slug="billing-api").exists()


# helpers' findings, 2026-12-03 ------------------------------------------------------


def test_a_focused_checkbox_wears_the_strong_ring(page: Any, user: User) -> None:
    world()
    log_in(page, user)
    page.goto("/?q=deploy")
    page.click("#id_q")
    for _ in range(12):  # Tab from the search box to the first checkbox, as a person does
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.id") == "id_semantic":
            break
    ring, accent = page.evaluate(
        """() => {
          const probe = document.createElement('span');
          probe.style.color = 'var(--accent)';
          document.body.append(probe);
          const accent = getComputedStyle(probe).color;
          probe.remove();
          return [getComputedStyle(document.activeElement).outlineColor, accent];
        }"""
    )
    assert page.evaluate("() => document.activeElement.id") == "id_semantic"
    assert ring == accent


def test_a_wide_markdown_table_scrolls_instead_of_breaking_words_on_a_phone(
    page: Any, user: User
) -> None:
    memories = world()
    head = "| " + " | ".join(f"column{n}" for n in range(7)) + " |"
    table = "\n".join([head, "|" + "---|" * 7, "| " + " | ".join(["value"] * 7) + " |"])
    wide = services.memory_create(
        project=memories["rollback-billing"].project, kind="reference", name="wide-table",
        body=table,
    )  # fmt: skip
    log_in(page, user)
    page.set_viewport_size(PHONE)
    page.goto(f"/memories/{wide.pk}/")

    heights = page.evaluate(
        "() => [...document.querySelectorAll('.markdown th')]"
        ".map(th => th.getBoundingClientRect().height)"
    )
    assert len(heights) == 7 and max(heights) < 48, heights  # one line each, not c/ol/umn
    assert overflow(page) == 0


def test_the_retrieval_history_keeps_its_query_readable_on_a_phone(page: Any, user: User) -> None:
    # The Query column was squeezed to about 40 px, its words broken letter by letter.
    memory = world()["rollback-billing"]
    RetrievalEvent.objects.create(
        kind="recalled", ids=[memory.pk], project="billing-api", agent="deploy-bot",
        query="how do we roll back the billing deploy after a failed migration",
    )  # fmt: skip
    log_in(page, user)
    page.set_viewport_size(PHONE)
    page.goto(f"/memories/{memory.pk}/")

    width = page.evaluate(
        "() => document.querySelector('.history td.q').getBoundingClientRect().width"
    )
    assert width >= 150, width
    assert overflow(page) == 0  # the table scrolls in its wrapper, not the page
