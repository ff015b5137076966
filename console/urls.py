from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import include, path

from console import views


console_patterns = [
    path("", views.catalog, name="catalog"),
    path("tables/register", views.register, name="register"),
    path("tables/<int:pk>/", views.overview, name="overview"),
    path("tables/<int:pk>/timeline", views.timeline, name="timeline"),
    path("tables/<int:pk>/instants/<int:instant_id>", views.instant_detail, name="instant"),
    path("tables/<int:pk>/file-groups", views.file_groups, name="file_groups"),
    path("tables/<int:pk>/sync", views.sync, name="sync"),
    path("tables/<int:pk>/sync-status", views.sync_status, name="sync_status"),
]

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include((console_patterns, "console"))),
]
