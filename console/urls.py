from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import path

from console import views
from console.api import api

urlpatterns = [
    path("", views.search, name="search"),
    path("palette/", views.palette, name="palette"),
    path("memories/<str:memory_id>/", views.memory_detail, name="memory_detail"),
    path("memories/<str:memory_id>/edit/", views.memory_edit, name="memory_edit"),
    path("memories/<str:memory_id>/supersede/", views.memory_supersede, name="memory_supersede"),
    path("memories/<str:memory_id>/archive/", views.memory_archive, name="memory_archive"),
    path("memories/<str:memory_id>/restore/", views.memory_restore, name="memory_restore"),
    path("memories/<str:memory_id>/delete/", views.memory_delete, name="memory_delete"),
    path("memories/<str:memory_id>/star/", views.memory_star, name="memory_star"),
    path("m/<str:name>/", views.memory_by_name, name="memory_by_name"),
    path("notes/<str:note_id>/", views.note_detail, name="note_detail"),
    path("notes/<str:note_id>/star/", views.note_star, name="note_star"),
    path("favorites/", views.favorites, name="favorites"),
    path("projects/", views.projects, name="projects"),
    path("settings/", views.settings_page, name="settings"),
    path("settings/preview/", views.settings_preview, name="settings_preview"),
    path("settings/<str:key>/", views.settings_save, name="settings_save"),
    path("inspect/", views.inspect, name="inspect"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
]
