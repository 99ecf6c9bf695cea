"""Agent tokens: `create` (prints the secret once), `list`, `revoke`.

`create` for a slug no project has says so as `recall` and `search` do, with
where to look (it said "No such project: x." alone); `list` heads its columns
(a row read "1  20562e1b30  hE  rw  billing-api  used never  live", the prefix
and scope unnamed; "last used" now heads the time).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from console import tokens
from console.management.projects import unknown
from console.models import AgentToken


class Command(BaseCommand):
    help = "Create, list or revoke the tokens agents use for the API and MCP."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a token and print its secret once")
        create.add_argument("--agent", required=True, help="who uses it (shown in events)")
        create.add_argument(
            "--project", action="append", required=True, help="allowed project (repeatable)"
        )
        create.add_argument("--write", action="store_true", help="may create and curate items")
        create.add_argument(
            "--admin", action="store_true", help="may also create projects (POST /projects)"
        )
        sub.add_parser("list", help="every token, newest first (never the secrets)")
        revoke = sub.add_parser(
            "revoke", help="revoke a token by numeric id or prefix (its first 4+ characters do)"
        )
        revoke.add_argument("token", metavar="ID_OR_PREFIX")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            getattr(self, f"_{options['action']}")(options)
        except (ValidationError, AgentToken.DoesNotExist) as exc:
            messages = exc.messages if isinstance(exc, ValidationError) else [str(exc)]
            raise CommandError(" ".join(messages)) from exc

    def _create(self, options: dict[str, Any]) -> None:
        unknown(options["project"])
        token, secret = tokens.token_create(
            agent=options["agent"],
            projects=options["project"],
            may_write=options["write"],
            may_admin=options["admin"],
        )
        scope = ", ".join(options["project"])
        self.stderr.write(
            f"token {token.pk} ({tokens.token_scope(token)}) for {token.agent} on {scope}"
        )
        self.stderr.write("The secret is shown once; store it now (RECALL_AGENT_TOKEN for MCP):")
        self.stdout.write(secret)

    def _list(self, options: dict[str, Any]) -> None:
        rows = tokens.token_list()
        if not rows:
            self.stdout.write("no tokens")
            return
        self.stdout.write(
            f"{'id':>4}  {'prefix':<10}  {'agent':<20} {'scope':<8}  "
            f"{'projects':<30} {'last used':<21} state"
        )
        for t in rows:
            projects = ",".join(sorted(p.slug for p in t.projects.all()))
            state = f"revoked {t.revoked:%Y-%m-%d %H:%M}" if t.revoked else "live"
            used = f"{t.last_used:%Y-%m-%d %H:%M}" if t.last_used else "never"
            self.stdout.write(
                f"{t.pk:>4}  {t.prefix}  {t.agent:<20} {'rw' if t.may_write else 'ro'}"
                f"{'+admin' if t.may_admin else '      '}  "
                f"{projects:<30} {used:<21} {state}"
            )

    def _revoke(self, options: dict[str, Any]) -> None:
        found = tokens.token_find(options["token"])
        if found.revoked is not None:
            self.stdout.write(
                f"token {found.pk} ({found.prefix}) of {found.agent} was revoked already, "
                f"{found.revoked:%Y-%m-%d %H:%M} UTC"
            )
            return
        token = tokens.token_revoke(token=found)
        self.stdout.write(f"revoked token {token.pk} ({token.prefix}) of {token.agent}")
