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
    path("tables/<int:pk>/lock/break", views.lock_break, name="lock_break"),
    path("tables/<int:pk>/plans", views.plan_request, name="plan_request"),
    path("tables/<int:pk>/plans/<int:plan_id>", views.plan_detail, name="plan"),
    path("tables/<int:pk>/plans/<int:plan_id>/progress", views.plan_progress, name="plan_progress"),
    path("tables/<int:pk>/plans/<int:plan_id>/approve", views.plan_decide, {"decision": "approve"},
         name="plan_approve"),
    path("tables/<int:pk>/plans/<int:plan_id>/reject", views.plan_decide, {"decision": "reject"}, name="plan_reject"),
    path("tables/<int:pk>/plans/<int:plan_id>/report.csv", views.plan_report_csv, name="plan_csv"),
    path("tables/<int:pk>/savepoints", views.savepoints, name="savepoints"),
    path("tables/<int:pk>/savepoints/create", views.savepoint_create, name="savepoint_create"),
    path("tables/<int:pk>/savepoints/<str:instant>/delete", views.savepoint_delete, name="savepoint_delete"),
    path("tables/<int:pk>/restore/<str:savepoint>", views.restore_preview, name="restore"),
    path("tables/<int:pk>/jobs/restore", views.job_request, {"kind": "restore"}, name="restore_run"),
    path("tables/<int:pk>/jobs/rollback", views.job_request, {"kind": "rollback"}, name="rollback_run"),
    path("tables/<int:pk>/jobs/<int:job_id>", views.job_detail, name="job"),
    path("tables/<int:pk>/failed-writes", views.failed_writes, name="failed_writes"),
    path("audit", views.audit_log, name="audit"),
    path("tables/<int:pk>/settings", views.table_settings, name="table_settings"),
    path("tables/<int:pk>/cleans/<str:instant>/run", views.clean_run_pending, name="clean_run_pending"),
]

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include((console_patterns, "console"))),
]
