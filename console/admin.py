from __future__ import annotations

from django.contrib import admin

from console.admin_tokens import TokenAdmin
from console.models import (
    AgentToken,
    Edge,
    IndexJob,
    Memory,
    Note,
    Project,
    RetrievalEvent,
    Setting,
)


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin[Project]):
    list_display = ["slug", "name", "isolation", "favorite", "retired_at"]
    search_fields = ["slug", "name"]
    list_filter = ["isolation"]


@admin.register(Memory)
class MemoryAdmin(admin.ModelAdmin[Memory]):
    list_display = ["name", "project", "kind", "favorite", "updated", "invalid_at"]
    list_filter = ["kind", "project", "favorite"]
    search_fields = ["id", "name", "description"]
    readonly_fields = ["id", "content_hash", "created", "updated", "superseded_by"]


@admin.register(Note)
class NoteAdmin(admin.ModelAdmin[Note]):
    list_display = ["title", "project", "favorite", "updated"]
    search_fields = ["id", "title", "slug"]


@admin.register(Edge)
class EdgeAdmin(admin.ModelAdmin[Edge]):
    list_display = ["src", "dst", "rel", "origin", "weight"]
    list_filter = ["origin"]


@admin.register(Setting)
class SettingAdmin(admin.ModelAdmin[Setting]):
    list_display = ["key", "updated", "updated_by"]


@admin.register(AgentToken)
class AgentTokenAdmin(TokenAdmin):
    list_display = ["agent", "prefix", "may_write", "created", "last_used", "revoked"]
    filter_horizontal = ["projects"]


@admin.register(RetrievalEvent)
class RetrievalEventAdmin(admin.ModelAdmin[RetrievalEvent]):
    list_display = ["kind", "project", "agent", "at"]
    list_filter = ["kind"]


@admin.register(IndexJob)
class IndexJobAdmin(admin.ModelAdmin[IndexJob]):
    list_display = ["item", "item_id", "op", "attempts", "last_error", "created"]
