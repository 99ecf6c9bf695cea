"""Demo data the project wrote itself: four projects of a small software team.

Loaded by `manage.py demo` (and `make run`) through the write services, so it
gets outbox jobs, wikilink edges and a real supersede like any other data.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from console import indexing, services
from console.models import Edge, Memory, Project

PROJECTS: list[dict[str, str]] = [
    {
        "slug": "billing-api",
        "name": "Billing API",
        "description": "Invoices, payments and the Stripe webhook consumer (Django, Postgres).",
        "isolation": "open",
    },
    {
        "slug": "mobile-app",
        "name": "Mobile app",
        "description": "The React Native client for iOS and Android.",
        "isolation": "open",
    },
    {
        "slug": "payroll",
        "name": "Payroll",
        "description": "Salary runs and tax filings. Confidential: nothing leaves this project.",
        "isolation": "confidential",
    },
    {
        "slug": "secret-lab",
        "name": "Secret lab",
        "description": "Pre-announcement research. Sealed: nothing in or out.",
        "isolation": "sealed",
    },
]


def m(project: str | None, kind: str, name: str, description: str, body: str, *,
      tags: tuple[str, ...] = (), importance: float = 0.5, days: int = 30,
      **extra: Any) -> dict[str, Any]:  # fmt: skip
    return {"project": project, "kind": kind, "name": name, "description": description,
            "body": body.strip() + "\n", "tags": list(tags), "importance": importance,
            "days": days, **extra}  # fmt: skip


GLOBAL = [
    m(
        None,
        "constraint",
        "never-force-push-main",
        "Never force-push to main or a release branch; revert instead.",
        """
History on `main` is what production was built from. Rewriting it breaks every
open branch and the audit trail.

- To undo a merge: `git revert -m 1 <merge-sha>` and open a PR.
- Branch protection enforces this; asking an admin to lift it is not a workaround.
""",
        tags=("git", "safety"),
        importance=0.9,
        days=400,
    ),
    m(
        None,
        "constraint",
        "secrets-never-in-repo",
        "No secrets in git, tickets or memories: use the vault and reference the path.",
        """
Credentials live in the vault under `kv/<team>/<service>`. Write the *path* in
docs and memories, never the value. A leaked key is rotated within the hour,
then the leak is written up with the [[postmortem-template]].
""",
        tags=("security",),
        importance=0.95,
        days=380,
    ),
    m(
        None,
        "constraint",
        "deploy-freeze-fridays",
        "No production deploys after 15:00 on Fridays or before public holidays.",
        """
Fixes that cannot wait go through the on-call lead (see [[on-call-handoff]]).
The freeze covers schema migrations too, even "harmless" ones.
""",
        tags=("deploys", "process"),
        importance=0.8,
        days=300,
    ),
    m(
        None,
        "constraint",
        "pii-stays-in-eu",
        "Personal data is stored and processed in eu-west-1 only.",
        """
This includes logs, backups, analytics exports and LLM prompts. A vendor that
cannot pin the region does not get personal data.
""",
        tags=("privacy", "compliance"),
        importance=0.9,
        days=350,
    ),
    m(
        None,
        "convention",
        "conventional-commits",
        "Commit messages follow Conventional Commits: feat:, fix:, chore:, ...",
        """
```
fix(billing): round VAT per line, not per invoice

The per-invoice rounding drifted by one cent on 3+ line invoices.
```
The release notes are generated from these prefixes.
""",
        tags=("git",),
        days=360,
    ),
    m(
        None,
        "convention",
        "feature-flags-for-risky-changes",
        "Risky changes ship dark behind a flag and are turned on gradually.",
        """
1. Add the flag (default off) in the same PR as the code.
2. Turn it on for staff, then 5%, 25%, 100%, watching error rates.
3. Delete the flag within two sprints of reaching 100%.
""",
        tags=("deploys", "flags"),
        days=200,
    ),
    m(
        None,
        "runbook",
        "on-call-handoff",
        "Weekly on-call handoff: open incidents, silenced alerts, risky deploys.",
        """
Every Monday at 10:00 the outgoing on-call writes:

- open incidents and their owners
- alerts that are silenced, and until when
- deploys planned for the week that touch money or auth

Then the pager rotation is switched in the paging tool, not before.
""",
        tags=("on-call",),
        importance=0.7,
        days=250,
    ),
    m(
        None,
        "reference",
        "postmortem-template",
        "Blameless postmortem template: timeline, impact, causes, actions.",
        """
## Summary
## Impact (who, how long, how much)
## Timeline (UTC)
## Contributing causes
## What went well
## Action items (owner, due date)
""",
        tags=("incidents",),
        days=320,
    ),
]

BILLING = [
    m(
        "billing-api",
        "decision",
        "api-versioning-in-url",
        "Public API versions live in the URL path: /v1/, /v2/.",
        """
Chosen for visibility in logs and docs. Each breaking change bumps the path;
old versions are served for 12 months.
""",
        tags=("api", "versioning"),
        importance=0.7,
        days=420,
    ),
    m(
        "billing-api",
        "runbook",
        "zero-downtime-migrations",
        "Schema changes ship in expand / migrate / contract steps, one deploy each.",
        """
Follow [[expand-contract-migrations]] and deploy with [[deploy-billing]].

- Never rename a column in one step.
- Backfills run as a batched management command, not inside the migration.
- Add indexes with `CREATE INDEX CONCURRENTLY` (`AddIndexConcurrently`).
""",
        tags=("migrations", "postgres"),
        importance=0.8,
        days=150,
    ),
    m(
        "billing-api",
        "convention",
        "expand-contract-migrations",
        "Expand (add nullable), migrate (dual-write + backfill), contract (drop).",
        """
| step | code reads | code writes |
|---|---|---|
| expand | old | old + new |
| migrate | new | old + new |
| contract | new | new |
""",
        tags=("migrations",),
        days=160,
    ),
    m(
        "billing-api",
        "runbook",
        "deploy-billing",
        "Deploy the billing API: tag, wait for CI, promote, watch the dashboards.",
        """
Mind [[deploy-freeze-fridays]].

```bash
git tag -a billing-$(date +%Y.%m.%d) -m "release"
git push --tags                 # CI builds and pushes the image
./ops/promote billing staging   # then run the smoke suite
./ops/promote billing production
```

Watch the p95 latency and 5xx panels for 15 minutes; run [[smoke-tests]]
against production. If anything is off, follow [[rollback-billing]].
""",
        tags=("deploys",),
        importance=0.85,
        days=120,
        favorite=True,
    ),
    m(
        "billing-api",
        "runbook",
        "rollback-billing",
        "Roll back billing by promoting the previous image; never roll back migrations.",
        """
`./ops/promote billing production --image <previous-tag>`

Migrations are forward-only: thanks to [[expand-contract-migrations]] the
previous image still works with the new schema.
""",
        tags=("deploys", "incidents"),
        importance=0.8,
        days=118,
    ),
    m(
        "billing-api",
        "reference",
        "smoke-tests",
        "The smoke suite: create a customer, invoice, pay with a test card, refund.",
        """
Run with `make smoke ENV=production`. It uses the `smoke@` customer and the
Stripe test clock; it never touches real cards.
""",
        tags=("testing",),
        days=110,
    ),
    m(
        "billing-api",
        "gotcha",
        "stripe-webhook-idempotency",
        "Stripe retries webhooks for 3 days: the same event can arrive many times.",
        """
We once double-credited 41 invoices after a slow deploy made Stripe retry.
Store the event id before acting on it; see [[idempotency-keys]].
""",
        tags=("stripe", "webhooks"),
        importance=0.9,
        days=90,
    ),
    m(
        "billing-api",
        "convention",
        "idempotency-keys",
        "Every money-moving endpoint takes an Idempotency-Key header.",
        """
The key and the response are stored for 24 hours; a replay returns the stored
response with `Idempotent-Replayed: true`.
""",
        tags=("api", "payments"),
        days=95,
    ),
    m(
        "billing-api",
        "gotcha",
        "redis-cache-stampede",
        "When the price cache expires at once, hundreds of workers hit Postgres.",
        """
Expiry is jittered (TTL +/- 10%) and one worker recomputes under a lock while
the others serve the stale value. Keys carry a schema version: see
[[cache-key-versioning]].
""",
        tags=("cache", "redis", "performance"),
        importance=0.7,
        days=70,
    ),
    m(
        "billing-api",
        "convention",
        "cache-key-versioning",
        "Cache keys embed a version: price:v3:<id>. Bump it when the shape changes.",
        """
Bumping the version is how we "flush" a cache safely during a deploy: old pods
read old keys, new pods read new keys, nothing deserialises the wrong shape.
""",
        tags=("cache",),
        days=72,
    ),
    m(
        "billing-api",
        "gotcha",
        "flaky-test-invoice-pdf",
        "test_invoice_pdf fails between 23:00 and 01:00 UTC: it renders local dates.",
        """
The PDF shows the invoice date in the customer's timezone but the test
compared against `date.today()`. Freeze time in the test:

```python
@time_machine.travel("2024-05-01 12:00Z")
def test_invoice_pdf(): ...
```
""",
        tags=("flaky-tests", "timezones"),
        days=45,
    ),
    m(
        "billing-api",
        "constraint",
        "money-as-integer-cents",
        "Amounts are integers in minor units (cents) with an ISO currency code.",
        """
No floats anywhere near money. `Decimal` is fine for tax maths, converted back
to integer cents with banker's rounding at the line level.
""",
        tags=("payments",),
        importance=0.9,
        days=500,
    ),
    m(
        "billing-api",
        "fact",
        "billing-db-replica-lag",
        "The read replica lags up to 2 s at month-end invoice runs.",
        """
Read-your-writes flows (pay, then show the receipt) must read from the primary.
""",
        tags=("postgres",),
        days=60,
    ),
    m(
        "billing-api",
        "fact",
        "stripe-api-version",
        "We are pinned to Stripe API version 2023-10-16.",
        "Upgrading changes webhook payload shapes; plan it like a migration.",
        tags=("stripe",),
        days=80,
    ),
    m(
        "billing-api",
        "decision",
        "celery-retry-policy",
        "Celery tasks retry with exponential backoff, max 8 tries, then dead-letter.",
        """
`autoretry_for=(TransientError,)`, `retry_backoff=True`, `max_retries=8`.
Dead-lettered tasks page nobody; they appear on the Monday handoff list.
""",
        tags=("celery",),
        days=140,
    ),
    m(
        "billing-api",
        "episode",
        "invoice-duplicates-incident",
        "March incident: 41 duplicate credits after webhook retries during a slow deploy.",
        """
Timeline in the postmortem doc. Root cause: the handler credited before
recording the event id. Fixed by [[stripe-webhook-idempotency]].
""",
        tags=("incidents", "stripe"),
        days=88,
        agent_id="claude-code",
        session_id="billing-api:incident-0314",
        session_order=0,
    ),
    m(
        "billing-api",
        "preference",
        "prefer-small-prs",
        "The billing team prefers PRs under 400 lines, one concern each.",
        "Large refactors are split into mechanical and behavioural PRs.",
        tags=("process",),
        days=30,
    ),
]

MOBILE = [
    m(
        "mobile-app",
        "convention",
        "release-train",
        "A release train leaves every second Tuesday; late features wait for the next.",
        """
Unfinished work ships behind a flag ([[feature-flags-for-risky-changes]]).
The branch cut is Monday 12:00; only fixes are cherry-picked after it.
""",
        tags=("releases",),
        importance=0.7,
        days=200,
    ),
    m(
        "mobile-app",
        "gotcha",
        "app-store-review-delay",
        "App Store review can take 3 days before holidays: submit by Wednesday.",
        "Phased release can be paused but not rolled back; a fix is a new build.",
        tags=("ios", "releases"),
        days=150,
    ),
    m(
        "mobile-app",
        "gotcha",
        "push-token-rotation",
        "Push tokens rotate on reinstall and OS upgrade; stale ones must be pruned.",
        """
APNs answers `410 Unregistered` for a dead token: delete it then, do not
retry. FCM returns `UNREGISTERED` for the same case.
""",
        tags=("push", "ios", "android"),
        days=100,
    ),
    m(
        "mobile-app",
        "decision",
        "offline-sync-last-writer-wins",
        "Offline edits sync last-writer-wins per field, with server timestamps.",
        """
We rejected CRDTs for now: the only concurrent-edit case is a user on two
devices. Conflicts are logged with both values for support.
""",
        tags=("sync", "offline"),
        importance=0.6,
        days=180,
    ),
    m(
        "mobile-app",
        "constraint",
        "min-supported-os",
        "Minimum supported versions: iOS 15 and Android 8 (API 26).",
        "Raising them needs product sign-off and a two-release warning banner.",
        tags=("ios", "android"),
        importance=0.7,
        days=220,
    ),
    m(
        "mobile-app",
        "decision",
        "hermes-engine",
        "Hermes is the JS engine on both platforms.",
        "Startup went from 2.1 s to 1.3 s on a mid-range Android phone.",
        tags=("performance",),
        days=240,
    ),
    m(
        "mobile-app",
        "reference",
        "crash-reporting",
        "Crashes go to the crash reporter with source maps uploaded by CI.",
        "A release without uploaded source maps is blocked by the [[release-train]] checklist.",
        tags=("observability",),
        days=130,
    ),
    m(
        "mobile-app",
        "reference",
        "deep-link-scheme",
        "Deep links: app://invoice/<id> and https://app.example.com/i/<id>.",
        "Universal links need the apple-app-site-association file on the web host.",
        tags=("links",),
        days=90,
    ),
    m(
        "mobile-app",
        "gotcha",
        "flaky-e2e-detox",
        "Detox e2e tests flake on the first launch: the simulator animates the splash.",
        """
Disable animations in the test build and wait for the `home-ready` test id,
not a fixed sleep. Quarantined tests are listed in `e2e/QUARANTINE.md` and
block the [[release-train]] only when quarantined for two trains.
""",
        tags=("flaky-tests", "e2e"),
        days=40,
    ),
    m(
        "mobile-app",
        "runbook",
        "codepush-hotfix",
        "JS-only hotfixes go out over the air; native changes need a store release.",
        """
```bash
appcenter codepush release-react -a team/app-ios -d Production --mandatory
```
Check the rollout metric for 30 minutes before widening.
""",
        tags=("releases", "hotfix"),
        importance=0.7,
        days=60,
    ),
    m(
        "mobile-app",
        "convention",
        "analytics-event-naming",
        "Analytics events are object_action in snake case: invoice_viewed.",
        "Properties never carry personal data (see the global privacy constraint).",
        tags=("analytics",),
        days=110,
    ),
    m(
        "mobile-app",
        "fact",
        "mobile-api-client-version",
        "The app sends Accept-Version: 2 and the app build in User-Agent.",
        "Support can map a crash to the API version from the request logs.",
        tags=("api",),
        days=35,
    ),
]

PAYROLL = [
    m(
        "payroll",
        "fact",
        "payroll-run-schedule",
        "Payroll runs on the 25th; if it is a weekend, the Friday before.",
        "Bank files must reach the bank by 14:00 two business days before.",
        tags=("schedule",),
        importance=0.8,
        days=300,
    ),
    m(
        "payroll",
        "runbook",
        "tax-table-updates",
        "Tax tables change every January: import, diff against last year, sign off.",
        """
1. Import the published tables with `manage.py import_tax_tables 2025`.
2. Run the regression payslips and diff them against December.
3. Two people sign off before the first run of the year.
""",
        tags=("tax",),
        importance=0.8,
        days=280,
    ),
    m(
        "payroll",
        "constraint",
        "payroll-data-retention",
        "Payslips are kept 10 years; bank details are deleted 6 months after leaving.",
        "The nightly retention job logs every deletion to the audit table.",
        tags=("compliance", "retention"),
        importance=0.9,
        days=400,
    ),
    m(
        "payroll",
        "reference",
        "bank-file-format",
        "Salary payments go to the bank as ISO 20022 pain.001 XML.",
        "The schema validator runs before upload; the bank rejects the whole file on one error.",
        tags=("bank",),
        days=260,
    ),
    m(
        "payroll",
        "gotcha",
        "payroll-rounding",
        "Round each payslip line, then sum: rounding the total drifts by cents.",
        "Auditors compare the per-line amounts, not just totals. See [[bank-file-format]].",
        tags=("rounding",),
        days=120,
    ),
    m(
        "payroll",
        "protocol",
        "payroll-access-review",
        "Quarterly access review: every payroll role is re-approved by its manager.",
        "Access not re-approved within 10 days is revoked automatically.",
        tags=("security", "compliance"),
        days=90,
    ),
    m(
        "payroll",
        "runbook",
        "off-cycle-payments",
        "Off-cycle payments go out in a one-person batch between regular runs.",
        "They run outside the [[payroll-run-schedule]] but need the same two-person "
        "approval as a regular run.",
        tags=("payments",),
        days=70,
    ),
]

LAB = [
    m(
        "secret-lab",
        "fact",
        "lab-codename",
        "The project's public codename is Heron; never use the product name outside the lab.",
        "",
        tags=("naming",),
        importance=0.9,
        days=60,
    ),
    m(
        "secret-lab",
        "constraint",
        "lab-gpu-quota",
        "The lab may use at most 8 GPUs between 08:00 and 20:00 UTC.",
        "Outside those hours the shared cluster's quota is lifted.",
        tags=("compute",),
        days=50,
    ),
    m(
        "secret-lab",
        "gotcha",
        "eval-harness-seeds",
        "Evaluation numbers are only comparable with fixed seeds and the pinned data split.",
        "Record the seed and the data checksum in every result, see [[lab-experiment-log]].",
        tags=("evaluation",),
        days=30,
    ),
    m(
        "secret-lab",
        "protocol",
        "model-card-checklist",
        "Every model that leaves a notebook gets a model card: data, metrics, limits.",
        "",
        tags=("documentation",),
        days=25,
    ),
    m(
        "secret-lab",
        "stage",
        "lab-experiment-log",
        "Experiments are logged with id, hypothesis, seed, data checksum and result.",
        "The log is the source for the weekly lab review.",
        tags=("process",),
        days=20,
    ),
]

MEMORIES = GLOBAL + BILLING + MOBILE + PAYROLL + LAB

# (project, old name) -> the fields of its replacement, written by memory_supersede.
SUPERSEDED: list[tuple[str | None, str, dict[str, Any]]] = [
    (
        "billing-api",
        "api-versioning-in-url",
        {
            "name": "api-versioning-header",
            "description": "API versions are negotiated with an Accept-Version header; "
            "the URL path stays /api/.",
            "body": "Replaces URL versions: clients pin a version per request, and we can "
            "sunset a version per endpoint. Old /v1/ paths redirect for 12 months.\n",
        },
    )
]
FAVORITES: list[tuple[str | None, str]] = [(None, "never-force-push-main")]

NOTES: list[dict[str, Any]] = [
    {
        "project": None,
        "title": "Reading list: migrations at scale",
        "description": "Articles on online schema changes to read before the Q3 migration.",
        "body": "- online schema change tools compared\n- lock timeouts in Postgres\n",
        "tags": ["reading", "migrations"],
    },
    {
        "project": None,
        "title": "Idea: expire working memories",
        "description": "Working memories older than a week could be archived automatically.",
        "body": "Needs a review screen first, so nothing useful disappears silently.\n",
        "tags": ["idea"],
    },
    {
        "project": "billing-api",
        "title": "Meeting: Stripe API upgrade",
        "description": "Plan for moving off the pinned Stripe API version.",
        "body": "1. Read the changelog since 2023-10-16.\n2. Replay a week of webhooks "
        "against the new version in staging.\n",
        "tags": ["stripe", "meeting"],
    },
    {
        "project": "mobile-app",
        "title": "Release checklist draft",
        "description": "Steps to turn into a protocol memory once the team agrees.",
        "body": "- [ ] source maps uploaded\n- [ ] phased release at 10%\n"
        "- [ ] crash-free sessions above 99.5% for 24 h\n",
        "tags": ["releases"],
    },
]


@dataclass
class DemoReport:
    projects: int = 0
    memories: int = 0
    superseded: int = 0
    notes: int = 0
    favorites: int = 0
    edges: int = 0
    seconds: float = 0.0
    names: list[str] = field(default_factory=list)


def demo_load(*, if_empty: bool = False) -> DemoReport | None:
    """Load the demo data and index it; None when `if_empty` and memories exist."""
    if if_empty and Memory.objects.exists():
        return None
    slugs = [p["slug"] for p in PROJECTS]
    taken = list(Project.objects.filter(slug__in=slugs).values_list("slug", flat=True))
    if taken:
        raise ValueError(f"the demo is already loaded (project {taken[0]!r} exists)")
    started = time.perf_counter()
    report = DemoReport()
    with transaction.atomic():
        projects = {p["slug"]: services.project_create(**p) for p in PROJECTS}
        report.projects = len(projects)
        made = _memories(projects)
        report.memories = len(made)
        for slug, name, fields in SUPERSEDED:
            services.memory_supersede(memory=made[slug, name], **fields)
            report.superseded += 1
        favorites = FAVORITES + [(s["project"], s["name"]) for s in MEMORIES if s.get("favorite")]
        for key in favorites:
            services.favorite_toggle(item=made[key], value=True)
        report.favorites = len(favorites)
        for spec in NOTES:
            fields = {k: v for k, v in spec.items() if k != "project"}
            services.note_create(project=projects.get(spec["project"] or ""), **fields)
        report.notes = len(NOTES)
    indexing.apply_pending()
    report.edges = Edge.objects.count()
    report.seconds = time.perf_counter() - started
    return report


def _memories(projects: dict[str, Project]) -> dict[tuple[str | None, str], Memory]:
    now = timezone.now()
    made = {}
    for spec in MEMORIES:
        fields = {k: v for k, v in spec.items() if k not in ("project", "days", "favorite")}
        created = now - timedelta(days=spec["days"])
        made[spec["project"], spec["name"]] = services.memory_create(
            project=projects.get(spec["project"] or ""),
            created=created,
            valid_from=created,
            source="user_stated",
            **fields,
        )
    return made
