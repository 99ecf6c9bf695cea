"""Projects from the command line: `manage.py project create billing-api --name "Billing API"`."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from console import selectors, services
from recall.types import ISOLATIONS


class Command(BaseCommand):
    help = "Create or list projects (an agent token is bound to existing projects)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a project")
        create.add_argument("slug", help="lower-case letters, digits and '-', e.g. billing-api")
        create.add_argument("--name", default="", help="for people (default: the slug)")
        create.add_argument("--description", default="")
        create.add_argument("--isolation", choices=ISOLATIONS, default="open")
        sub.add_parser("list", help="list projects with their isolation")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "list":
            for project in selectors.project_list():
                self.stdout.write(f"{project.slug}\t{project.isolation}\t{project.name}")
            return
        try:
            project = services.project_create(
                slug=options["slug"], name=options["name"],
                description=options["description"], isolation=options["isolation"],
            )  # fmt: skip
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from exc
        self.stdout.write(f"created project {project.slug} ({project.isolation})")
