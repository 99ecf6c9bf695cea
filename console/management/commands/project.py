"""Projects from the command line: `manage.py project create billing-api --name "Billing API"`.

`grant` and `revoke` give a console login a project (console/roles.py: a
login without the staff flag sees only the projects granted to it, sealed
ones included only when granted), the same row the admin's Project members
page writes.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from console import selectors, services
from console.models import Project, ProjectMember
from recall.types import ISOLATIONS


def _said(exc: ValidationError) -> str:
    """Each field's messages after its name, each message once ('This field cannot be
    blank.' came twice with no field named: the slug's and the name's)."""
    if not hasattr(exc, "error_dict"):
        return " ".join(dict.fromkeys(exc.messages))
    parts = []
    for field, errors in exc.message_dict.items():
        shown = "name (default: the slug)" if field == "name" else field
        parts.append(f"{shown}: {' '.join(dict.fromkeys(errors))}")
    return "; ".join(parts)


class Command(BaseCommand):
    help = "Create or list projects, and grant or revoke a console login's access to one."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a project")
        create.add_argument("slug", help="lower-case letters, digits and '-', e.g. billing-api")
        create.add_argument("--name", default="", help="for people (default: the slug)")
        create.add_argument("--description", default="")
        create.add_argument("--isolation", choices=ISOLATIONS, default="open")
        sub.add_parser("list", help="list projects with their isolation")
        for action, text in (("grant", "let a console login see"), ("revoke", "take back")):
            member = sub.add_parser(action, help=f"{text} a project (staff see every project)")
            member.add_argument("slug")
            member.add_argument("--user", required=True, help="the console login's username")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "list":
            for project in selectors.project_list():
                self.stdout.write(f"{project.slug}\t{project.isolation}\t{project.name}")
        elif action in ("grant", "revoke"):
            self._member(action, slug=options["slug"], username=options["user"])
        else:
            self._create(options)

    def _create(self, options: dict[str, Any]) -> None:
        try:
            project = services.project_create(
                slug=options["slug"], name=options["name"],
                description=options["description"], isolation=options["isolation"],
            )  # fmt: skip
        except ValidationError as exc:
            raise CommandError(_said(exc)) from exc
        self.stdout.write(f"created project {project.slug} ({project.isolation})")

    def _member(self, action: str, *, slug: str, username: str) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"there is no login {username!r}")
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"there is no project {slug!r} (`project list` shows them)")
        if action == "grant":
            _, created = ProjectMember.objects.get_or_create(user=user, project=project)
            said = "granted" if created else "already had"
            self.stdout.write(f"{username} {said} {slug} ({project.isolation})")
        else:
            deleted, _ = ProjectMember.objects.filter(user=user, project=project).delete()
            self.stdout.write(
                f"{username} {'no longer sees' if deleted else 'did not have'} {slug}"
            )
        if user.is_staff or user.is_superuser:
            self.stdout.write(f"({username} is staff and sees every project anyway)")
