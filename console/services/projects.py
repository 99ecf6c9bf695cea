"""Projects: created through the services so each is validated."""

from __future__ import annotations

from django.db import transaction

from console.models import AgentToken, Project


def project_create(
    *, slug: str, name: str = "", description: str = "", isolation: str = "open"
) -> Project:
    project = Project(slug=slug, name=name or slug, description=description, isolation=isolation)
    project.full_clean()
    project.save()
    return project


def project_set_isolation(*, project: Project, isolation: str) -> Project:
    """Change an existing project's isolation (open, confidential, sealed), validated.

    Every request reads it from the row (console/store.py, console/access.py),
    so it holds from the next one on.
    """
    project.isolation = isolation
    project.full_clean()
    project.save(update_fields=["isolation"])
    return project


def project_get_or_create(*, slug: str) -> Project:
    existing = Project.objects.filter(slug=slug).first()
    return existing or project_create(slug=slug)


@transaction.atomic
def project_create_for_token(
    *, token_id: int, slug: str, name: str = "", description: str = "", isolation: str = "open"
) -> Project:
    """A new project, granted to the (admin) token that asked for it."""
    project = project_create(slug=slug, name=name, description=description, isolation=isolation)
    AgentToken.objects.get(pk=token_id).projects.add(project)
    return project
