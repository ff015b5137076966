from __future__ import annotations

from collections.abc import Callable

from django.http import HttpResponseBase
from django.templatetags.static import static
from django.urls import URLPattern, include, path
from django.views.generic import RedirectView

from console import (
    alerts,
    metrics,
    views,
    views_alerts,
    views_approvals,
    views_archival,
    views_bulk,
    views_compaction,
    views_discover,
    views_errors,
    views_health,
    views_history,
    views_people,
    views_preferences,
    views_services,
    views_versions,
)
from console.api import api
from console.signin import oidc
from console.signin import views as signin_views


def of_table(route: str, view: Callable[..., HttpResponseBase], name: str, **kwargs: str) -> URLPattern:
    """A page or action of one table: `tables/<pk>/route`; `kwargs` are passed to the view."""
    return path(f"tables/<int:pk>/{route}", view, kwargs, name=name)


console_patterns = [
    path("", views.home, name="home"),
    path("tables", views.catalog, name="catalog"),
    path("demo-status", views.demo_status, name="demo_status"),
    path("tables/register", views.register, name="register"),
    path("tables/discover", views_discover.discover, name="discover"),
    path("tables/bulk", views_bulk.bulk, name="bulk"),
    path("tables/discover/register", views_discover.discover_register, name="discover_register"),
    path("audit", views.audit_log, name="audit"),
    path("alerts", alerts.alerts_page, name="alerts"),
    path("alerts/setup", views_alerts.alerts_setup, name="alerts_setup"),
    path("alerts/channels/add", views_alerts.channel_add, name="alert_channel_add"),
    path("alerts/channels/test", views_alerts.channel_test, name="alert_channel_test"),
    path("alerts/channels/<int:channel_id>/on", views_alerts.channel_decide, {"change": "on"}, name="alert_channel_on"),
    path("alerts/channels/<int:channel_id>/off", views_alerts.channel_decide, {"change": "off"},
         name="alert_channel_off"),
    path("alerts/channels/<int:channel_id>/remove", views_alerts.channel_decide, {"change": "remove"},
         name="alert_channel_remove"),
    path("approvals", views_approvals.approvals_queue, name="approvals"),
    path("history", views_history.lake_history, name="history"),
    path("preferences", views_preferences.preferences, name="preferences"),
    path("tokens", views_people.tokens, name="tokens"),
    path("tokens/create", views_people.token_create, name="token_create"),
    path("tokens/<int:token_id>/revoke", views_people.token_revoke, name="token_revoke"),
    path("people", views_people.people, name="people"),
    path("people/create", views_people.people_create, name="people_create"),
    path("people/<int:user_id>/role", views_people.people_role, name="people_role"),
    path("people/<int:user_id>/deactivate", views_people.people_deactivate, name="people_deactivate"),
    path("people/<int:user_id>/reactivate", views_people.people_reactivate, name="people_reactivate"),
    path("people/grants/<int:grant_id>/confirm", views_people.people_grant_confirm, name="people_grant_confirm"),
    path("people/grants/<int:grant_id>/decline", views_people.people_grant_decline, name="people_grant_decline"),
    path("people/links/create", views_people.people_link, name="people_link"),
    path("people/links/<int:link_id>/delete", views_people.people_unlink, name="people_unlink"),
    of_table("", views.overview, "overview"),
    of_table("timeline", views.timeline, "timeline"),
    of_table("history", views_history.table_history, "table_history"),
    of_table("services", views_services.table_services, "table_services"),
    of_table("instants/<int:instant_id>", views.instant_detail, "instant"),
    of_table("instants/<int:instant_id>/raw/<str:state>", views.instant_raw, "instant_raw"),
    of_table("file-groups", views.file_groups, "file_groups"),
    of_table("sync", views.sync, "sync"),
    of_table("sync-status", views.sync_status, "sync_status"),
    of_table("lock/break", views.lock_break, "lock_break"),
    of_table("location/rerecord", views.location_rerecord, "location_rerecord"),
    of_table("metadata-table/drop", views.metadata_table_drop, "metadata_table_drop"),
    of_table("settings", views.table_settings, "table_settings"),
    of_table("plans", views.plan_request, "plan_request"),
    of_table("plans/<int:plan_id>", views.plan_detail, "plan"),
    of_table("plans/<int:plan_id>/progress", views.plan_progress, "plan_progress"),
    of_table("plans/<int:change_id>/approve", views_approvals.decide, "plan_approve", kind="clean plan",
             decision="approve"),
    of_table("plans/<int:change_id>/reject", views_approvals.decide, "plan_reject", kind="clean plan",
             decision="reject"),
    of_table("plans/<int:plan_id>/report.csv", views.plan_report_csv, "plan_csv"),
    of_table("savepoints", views.savepoints, "savepoints"),
    of_table("savepoints/create", views.savepoint_create, "savepoint_create"),
    of_table("savepoints/<str:instant>/delete", views.savepoint_delete, "savepoint_delete"),
    of_table("savepoints/<str:instant>", views_archival.savepoint, "savepoint"),
    of_table("archival", views_archival.archival, "archival"),
    of_table("archival/request", views_archival.archival_request, "archival_request"),
    of_table("archivals/<int:archival_id>", views_archival.archival_detail, "archival_detail"),
    of_table("archivals/<int:change_id>/approve", views_approvals.decide, "archival_approve", kind="archival",
             decision="approve"),
    of_table("archivals/<int:change_id>/decline", views_approvals.decide, "archival_decline", kind="archival",
             decision="reject"),
    of_table("compactions/request", views_compaction.compaction_request, "compaction_request"),
    of_table("compactions/<int:compaction_id>", views_compaction.compaction, "compaction"),
    of_table("compactions/<int:change_id>/approve", views_approvals.decide, "compaction_approve", kind="compaction",
             decision="approve"),
    of_table("compactions/<int:change_id>/reject", views_approvals.decide, "compaction_reject", kind="compaction",
             decision="reject"),
    of_table("versions", views_versions.table_versions, "versions"),
    of_table("versions/rehearse", views_versions.version_rehearse, "version_rehearse"),
    of_table("versions/request", views_versions.version_request, "version_request"),
    of_table("version-changes/<int:change_id>", views_versions.version_change, "version_change"),
    of_table("version-changes/<int:change_id>/approve", views_approvals.decide, "version_change_approve",
             kind="version change", decision="approve"),
    of_table("version-changes/<int:change_id>/reject", views_approvals.decide, "version_change_reject",
             kind="version change", decision="reject"),
    of_table("restore/<str:savepoint>", views.restore_preview, "restore"),
    of_table("jobs/restore", views.job_request, "restore_run", kind="restore"),
    of_table("jobs/rollback", views.job_request, "rollback_run", kind="rollback"),
    of_table("jobs/<int:job_id>", views.job_detail, "job"),
    of_table("failed-writes", views.failed_writes, "failed_writes"),
    of_table("failed-writes/<str:instant>", views.rollback_preview, "rollback_preview"),
    of_table("retention", views.retention, "retention"),
    of_table("retention/estimate", views.retention_request, "retention_request"),
    of_table("cleans/<str:instant>/run", views.clean_run_pending, "clean_run_pending"),
    of_table("health/<str:kind>/repair", views_health.repair_preview, "repair_preview"),
    of_table("health/<str:kind>/repair/request", views_health.repair_request, "repair_request"),
    of_table("repairs/<int:repair_id>", views_health.repair_detail, "repair"),
    of_table("indexes", views_health.indexes, "indexes"),
    of_table("indexes/<str:index>/<str:action>", views_health.index_repair_request, "index_repair_request"),
    of_table("repairs/<int:change_id>/approve", views_approvals.decide, "repair_approve", kind="repair",
             decision="approve"),
    of_table("repairs/<int:change_id>/reject", views_approvals.decide, "repair_reject", kind="repair",
             decision="reject"),
]

handler403 = views.permission_denied
handler404 = views_errors.not_found

urlpatterns = [
    path("favicon.ico", RedirectView.as_view(url=static("console/favicon.svg"), permanent=True), name="favicon"),
    path("metrics", metrics.metrics, name="metrics"),
    path("api/v1/", api.urls),
    path("login/", signin_views.SignInView.as_view(), name="login"),
    path("logout/", signin_views.sign_out, name="logout"),
    path("oidc/authenticate/", oidc.OidcStart.as_view(), name="oidc_authentication_init"),
    path("oidc/callback/", oidc.OidcCallback.as_view(), name="oidc_authentication_callback"),
    path("", include((console_patterns, "console"))),
]
