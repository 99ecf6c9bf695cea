"""Projects from the command line: `manage.py project create billing-api --name "Billing API"`.

`isolation` changes an existing project's isolation (`project isolation
billing-api sealed`); `create --isolation` sets it for a new one only.

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
from recall.types import ISOLATION_SEALED, ISOLATIONS


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


def _project(slug: str) -> Project:
    try:
        return selectors.project_get(slug=slug)
    except Project.DoesNotExist:
        raise CommandError(f"there is no project {slug!r} (`project list` shows them)") from None


class Command(BaseCommand):
    help = (
        "Create or list projects, change a project's isolation, and grant or revoke a "
        "console login's access to one."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a project")
        create.add_argument("slug", help="lower-case letters, digits and '-', e.g. billing-api")
        create.add_argument("--name", default="", help="for people (default: the slug)")
        create.add_argument("--description", default="")
        create.add_argument("--isolation", choices=ISOLATIONS, default="open")
        sub.add_parser("list", help="list projects with their isolation")
        isolation = sub.add_parser("isolation", help="change an existing project's isolation")
        isolation.add_argument("slug")
        isolation.add_argument("isolation", choices=ISOLATIONS)
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
        elif action == "isolation":
            self._isolation(slug=options["slug"], isolation=options["isolation"])
        else:
            self._create(options)

    def _create(self, options: dict[str, Any]) -> None:
        # Django's own words were "slug: Project with this Slug already exists.": they
        # neither said its isolation nor how to change it, which `isolation` does.
        existing = Project.objects.filter(slug=options["slug"]).first()
        if existing is not None:
            raise CommandError(
                f"there is already a project '{existing.slug}' ({existing.isolation}): "
                f"`manage.py project isolation {existing.slug} ...` changes its isolation"
            )
        try:
            project = services.project_create(
                slug=options["slug"], name=options["name"],
                description=options["description"], isolation=options["isolation"],
            )  # fmt: skip
        except ValidationError as exc:
            raise CommandError(_said(exc)) from exc
        self.stdout.write(f"created project {project.slug} ({project.isolation})")

    def _isolation(self, *, slug: str, isolation: str) -> None:
        project = _project(slug)
        before = project.isolation
        if before == isolation:
            self.stdout.write(f"{slug} is already {isolation}")
            return
        try:
            services.project_set_isolation(project=project, isolation=isolation)
        except ValidationError as exc:
            raise CommandError(_said(exc)) from exc
        self.stdout.write(f"{slug}: {before} -> {isolation}")
        mixing = selectors.tokens_mixing(project=project) if isolation == ISOLATION_SEALED else 0
        if mixing:
            self.stderr.write(
                self.style.WARNING(
                    f"{mixing} live token{'s' if mixing > 1 else ''} bound to {slug} and other "
                    "projects now refused (a sealed project has a token of its own): "
                    "revoke and reissue with `manage.py agent_token`"
                )
            )

    def _member(self, action: str, *, slug: str, username: str) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"there is no login {username!r}")
        project = _project(slug)
        staff = user.is_staff or user.is_superuser
        if action == "grant":
            _, created = ProjectMember.objects.get_or_create(user=user, project=project)
            said = "granted" if created else "already had"
            self.stdout.write(f"{username} {said} {slug} ({project.isolation})")
            if staff:
                self.stdout.write(f"({username} is staff and sees every project anyway)")
            return
        deleted, _ = ProjectMember.objects.filter(user=user, project=project).delete()
        if not staff:
            self.stdout.write(
                f"{username} {'no longer sees' if deleted else 'did not have'} {slug}"
            )
            return
        # Not "no longer sees": a staff login still sees it.
        said = "revoked" if deleted else "there was none"
        self.stdout.write(
            f"{username}'s grant of {slug}: {said} ({username} is staff and sees every "
            "project: revoking a grant changes nothing for them)"
        )
