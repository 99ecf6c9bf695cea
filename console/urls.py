from __future__ import annotations

from django.contrib import admin
from django.urls import path

from console.api import api
from console.views import (
    base,
    digests,
    inspector,
    lists,
    memories,
    revisions,
    search,
    settings_pages,
    transfer,
)

urlpatterns = [
    path("", search.search, name="search"),
    path("palette/", search.palette, name="palette"),
    path("memories/new/", memories.memory_new, name="memory_new"),
    path("memories/<str:memory_id>/", memories.memory_detail, name="memory_detail"),
    path("memories/<str:memory_id>/edit/", memories.memory_edit, name="memory_edit"),
    path(
        "memories/<str:memory_id>/revisions/", revisions.memory_revisions, name="memory_revisions"
    ),
    path("memories/<str:memory_id>/supersede/", memories.memory_supersede, name="memory_supersede"),
    path("memories/<str:memory_id>/archive/", memories.memory_archive, name="memory_archive"),
    path("memories/<str:memory_id>/restore/", memories.memory_restore, name="memory_restore"),
    path("memories/<str:memory_id>/delete/", memories.memory_delete, name="memory_delete"),
    path("memories/<str:memory_id>/star/", memories.memory_star, name="memory_star"),
    path("m/<str:name>/", memories.memory_by_name, name="memory_by_name"),
    path("notes/new/", memories.note_new, name="note_new"),
    path("notes/<str:note_id>/", memories.note_detail, name="note_detail"),
    path("notes/<str:note_id>/edit/", memories.note_edit, name="note_edit"),
    path("notes/<str:note_id>/star/", memories.note_star, name="note_star"),
    path("notes/<str:note_id>/delete/", memories.note_delete, name="note_delete"),
    path("favorites/", lists.favorites, name="favorites"),
    path("projects/", lists.projects, name="projects"),
    path("projects/<str:key>/", lists.project_detail, name="project_detail"),
    path("projects/<str:key>/digest/", digests.digest_update, name="digest_update"),
    path("projects/<str:key>/import/", transfer.import_upload, name="import_upload"),
    path("projects/<str:key>/import/apply/", transfer.import_apply, name="import_apply"),
    path("export/", transfer.export_download, name="export_download"),
    path("settings/", settings_pages.settings_page, name="settings"),
    path("settings/preview/", settings_pages.settings_preview, name="settings_preview"),
    path("settings/<str:key>/", settings_pages.settings_save, name="settings_save"),
    path("inspect/", inspector.inspect, name="inspect"),
    # Logged in already (a bookmarked login link, a second tab): on to `next`, not a form.
    path("login/", base.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", base.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
]
