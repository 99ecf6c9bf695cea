"""The Django admin (staff only, as the admin always is).

Console roles (console/roles.py) make staff the ones who manage agent tokens
and grant people their projects, so those two admins answer to the staff
flag itself rather than to per-model permissions a superuser must hand out
first; the rest keep Django's permissions.

Memories, notes and projects are saved and deleted through the services
(console/services/admin_writes.py), so every admin change queues its index
jobs like any other write: moving a memory to another project, or renaming a
project, re-indexes what moved.
"""

from __future__ import annotations

import copy
from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import QuerySet
from django.forms.models import construct_instance
from django.http import HttpRequest

from console import roles, services
from console.admin_tokens import TokenAdmin
from console.models import (
    AgentToken,
    Edge,
    IndexJob,
    Memory,
    Note,
    Project,
    ProjectMember,
    RetrievalEvent,
    Setting,
)


class StaffManaged:
    """Every staff login may view, add, change and delete these."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return roles.is_staff(request.user)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return roles.is_staff(request.user)

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return roles.is_staff(request.user)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return roles.is_staff(request.user)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return roles.is_staff(request.user)


class MemberInline(StaffManaged, admin.TabularInline[ProjectMember, Project]):
    model = ProjectMember
    extra = 1
    fields = ["user", "created"]
    readonly_fields = ["created"]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin[Project]):
    list_display = ["slug", "name", "isolation", "favorite", "retired_at"]
    search_fields = ["slug", "name"]
    list_filter = ["isolation"]
    inlines = [MemberInline]

    def save_model(self, request: HttpRequest, obj: Project, form: Any, change: bool) -> None:
        previous = form.initial.get("slug") if change else None
        services.project_admin_save(project=obj, previous_slug=previous)

    def delete_model(self, request: HttpRequest, obj: Project) -> None:
        services.projects_delete([obj])

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Project]) -> None:
        services.projects_delete(list(queryset))


@admin.register(ProjectMember)
class ProjectMemberAdmin(StaffManaged, admin.ModelAdmin[ProjectMember]):
    """Who sees which project in the console (staff see all without a row)."""

    list_display = ["user", "project", "created"]
    list_filter = ["project"]
    search_fields = ["user__username", "project__slug"]
    fields = ["user", "project", "created"]
    readonly_fields = ["created"]


class MemoryForm(forms.ModelForm[Memory]):
    """The model's validation plus the services' (body length, importance, tags)."""

    class Meta:
        model = Memory
        fields = "__all__"

    def clean(self) -> dict[str, Any] | None:
        cleaned = super().clean()
        probe = construct_instance(self, copy.copy(self.instance))
        try:
            services.memory_validate(memory=probe)
        except ValidationError as exc:
            self.add_error(None, exc)  # field errors land on their fields
        return cleaned


@admin.register(Memory)
class MemoryAdmin(admin.ModelAdmin[Memory]):
    form = MemoryForm
    list_display = ["name", "project", "kind", "favorite", "updated", "invalid_at"]
    list_filter = ["kind", "project", "favorite"]
    search_fields = ["id", "name", "description"]
    readonly_fields = ["id", "content_hash", "created", "updated", "superseded_by"]

    def save_model(self, request: HttpRequest, obj: Memory, form: Any, change: bool) -> None:
        services.memory_admin_save(memory=obj, created=not change)

    def delete_model(self, request: HttpRequest, obj: Memory) -> None:
        services.memories_delete([obj])

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        services.memories_delete(list(queryset))


@admin.register(Note)
class NoteAdmin(admin.ModelAdmin[Note]):
    list_display = ["title", "project", "favorite", "updated"]
    search_fields = ["id", "title", "slug"]
    # A source typed without a scheme is https (Django 6's default, asked for now:
    # 5.2 warns that its "http" default is going away).
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    def save_model(self, request: HttpRequest, obj: Note, form: Any, change: bool) -> None:
        services.note_admin_save(note=obj, created=not change)

    def delete_model(self, request: HttpRequest, obj: Note) -> None:
        services.notes_delete([obj])

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Note]) -> None:
        services.notes_delete(list(queryset))


@admin.register(Edge)
class EdgeAdmin(admin.ModelAdmin[Edge]):
    list_display = ["src", "dst", "rel", "origin", "weight"]
    list_filter = ["origin"]


@admin.register(Setting)
class SettingAdmin(admin.ModelAdmin[Setting]):
    list_display = ["key", "updated", "updated_by"]


@admin.register(AgentToken)
class AgentTokenAdmin(StaffManaged, TokenAdmin):
    filter_horizontal = ["projects"]


@admin.register(RetrievalEvent)
class RetrievalEventAdmin(admin.ModelAdmin[RetrievalEvent]):
    list_display = ["kind", "project", "agent", "at"]
    list_filter = ["kind"]


@admin.register(IndexJob)
class IndexJobAdmin(admin.ModelAdmin[IndexJob]):
    list_display = ["item", "item_id", "op", "attempts", "last_error", "created"]
