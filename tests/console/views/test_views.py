"""Every page and every mutation for every persona: anonymous, outsider (no role), viewer,
operator, admin. Mutations are posted with a valid CSRF token, so that a refusal comes from
the role check and not from CSRF; the set of POST-only views is derived from the URLconf."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from console import services
from console.models import AuditEvent, Job, Table, TableLock
from console.models_approvals import ApprovalStatus
from tests.console.helpers import KEEP_FEW, SHORT_RETENTION, SHORT_RETENTION_FORM, leave_markers
from timeline import HudiTable

pytestmark = pytest.mark.django_db
ROLES = ("viewer", "operator", "admin")
PERSONAS = ("anonymous", "outsider", "viewer", "operator", "admin")
TABLE = "sample_table/cow/v9_txns_simple_nometa"
LATEST_COMMIT = "20260307135709890"  # the last completed commit of TABLE


def client_for(persona: str) -> Client:
    """A client enforcing CSRF like a browser, logged in as a new user of `persona` (without a
    password: hashing one costs more than the requests)."""
    client = Client(enforce_csrf_checks=True)
    if persona == "anonymous":
        return client
    user = User.objects.create_user(f"user-{persona}")
    if persona != "outsider":
        user.groups.add(Group.objects.get(name=persona))
    client.force_login(user)
    return client


def csrf_token(client: Client) -> str:
    """The token a form would carry: the login page sets the CSRF cookie for every persona."""
    assert client.get(reverse("login")).status_code == 200
    return str(client.cookies["csrftoken"].value)


def pages(table: Table) -> list[str]:
    instant = table.instants.filter(action="commit").first()
    assert instant is not None
    return [reverse("console:home"), reverse("console:catalog"), reverse("console:overview", args=[table.pk]),
            reverse("console:timeline", args=[table.pk]), reverse("console:instant", args=[table.pk, instant.pk]),
            reverse("console:file_groups", args=[table.pk]), reverse("console:sync_status", args=[table.pk]),
            reverse("console:retention", args=[table.pk]), reverse("console:archival", args=[table.pk]),
            reverse("console:instant_raw", args=[table.pk, instant.pk, "completed"])]


@pytest.mark.parametrize("role", ROLES)
def test_views_every_page_renders_for_every_role(table: Table, role: str) -> None:
    client = client_for(role)
    for url in pages(table):
        response = client.get(url)
        assert response.status_code == 200, url
    timeline = client.get(reverse("console:timeline", args=[table.pk]), {"action": "replacecommit"})
    assert b"replacecommit" in timeline.content and b"No instant matches" not in timeline.content
    detail = client.get(pages(table)[4])
    assert b"Write stats" in detail.content and b"partitionToWriteStats" in detail.content


def test_views_anonymous_is_sent_to_login_and_outsider_gets_404(table: Table) -> None:
    anonymous, outsider = client_for("anonymous"), client_for("outsider")
    for url in pages(table):
        assert anonymous.get(url).status_code == 302
        assert outsider.get(url).status_code == 404


# The mutation matrix. Each case is a request that succeeds for a user allowed to make it, and
# `done(queued)` says whether it changed anything (`queued`: the on-commit callbacks the
# request registered, i.e. the tasks it would send).

Queued = list[Callable[[], Any]]


class Case(NamedTuple):
    url: str
    data: dict[str, str]
    done: Callable[[Queued], bool]


Prepare = Callable[[Table, Callable[[str], Path]], Case]


def _register(table: Table, table_copy: Callable[[str], Path]) -> Case:
    path = table_copy("sample_table/cow/v8_nonpartitioned")
    return Case(reverse("console:register"), {"path": str(path)},
                lambda queued: Table.objects.filter(name="v8_nonpartitioned").exists() and len(queued) == 1)


def _sync(table: Table, table_copy: Callable[[str], Path]) -> Case:
    def done(queued: Queued) -> bool:
        for send in queued:
            send()  # the eager task runs the sync and its id lands on the row
        return Table.objects.get(pk=table.pk).sync_task_id != ""

    return Case(reverse("console:sync", args=[table.pk]), {}, done)


def _lock_break(table: Table, table_copy: Callable[[str], Path]) -> Case:
    past = timezone.now() - timedelta(hours=1)
    TableLock.objects.create(table=table, holder="clean-plan:0", token="stale", heartbeat_at=past, expires_at=past)
    return Case(reverse("console:lock_break", args=[table.pk]), {"token": "stale"},
                lambda queued: not TableLock.objects.filter(table=table).exists())


def _plan_request(table: Table, table_copy: Callable[[str], Path]) -> Case:
    return Case(reverse("console:plan_request", args=[table.pk]), SHORT_RETENTION_FORM,
                lambda queued: table.clean_plans.exists() and len(queued) == 1)


def _draft_plan(table: Table) -> int:
    """A draft plan that deletes files (12 of them with one commit retained)."""
    plan = services.plan_build(plan=services.plan_request(table=table, user=None, overrides=SHORT_RETENTION))
    assert plan.status == ApprovalStatus.DRAFT and plan.files_to_delete > 0
    return plan.pk


def _plan_approve(table: Table, table_copy: Callable[[str], Path]) -> Case:
    plan = _draft_plan(table)
    return Case(reverse("console:plan_approve", args=[table.pk, plan]), {},
                lambda queued: table.clean_plans.get(pk=plan).status == ApprovalStatus.APPROVING and len(queued) == 1)


def _plan_reject(table: Table, table_copy: Callable[[str], Path]) -> Case:
    plan = _draft_plan(table)
    return Case(reverse("console:plan_reject", args=[table.pk, plan]), {"note": "no"},
                lambda queued: table.clean_plans.get(pk=plan).status == ApprovalStatus.REJECTED)


def _savepoints(table: Table) -> set[str]:
    return set(table.instants.filter(action="savepoint", state="COMPLETED").values_list("requested_time", flat=True))


def _savepoint_create(table: Table, table_copy: Callable[[str], Path]) -> Case:
    return Case(reverse("console:savepoint_create", args=[table.pk]), {"instant": LATEST_COMMIT, "comment": "matrix"},
                lambda queued: _savepoints(table) == {LATEST_COMMIT})


def _savepoint(table: Table) -> str:
    return services.savepoint_create(table=table, user=None, instant_time=LATEST_COMMIT, comment="")


def _savepoint_delete(table: Table, table_copy: Callable[[str], Path]) -> Case:
    savepoint = _savepoint(table)
    return Case(reverse("console:savepoint_delete", args=[table.pk, savepoint]), {"confirm": savepoint},
                lambda queued: _savepoints(table) == set())


def _restore_run(table: Table, table_copy: Callable[[str], Path]) -> Case:
    savepoint = _savepoint(table)
    return Case(reverse("console:restore_run", args=[table.pk]), {"target": savepoint, "confirm": table.name},
                lambda queued: table.jobs.filter(kind=Job.Kind.RESTORE, target=savepoint).exists() and len(queued) == 1)


def _rollback_run(table: Table, table_copy: Callable[[str], Path]) -> Case:
    # The table has no failed write: the service looks at the commit and refuses it (audited).
    return Case(reverse("console:rollback_run", args=[table.pk]), {"target": LATEST_COMMIT, "confirm": LATEST_COMMIT},
                lambda queued: AuditEvent.objects.filter(action="rollback.refused", table=table).exists())


def _table_settings(table: Table, table_copy: Callable[[str], Path]) -> Case:
    return Case(reverse("console:table_settings", args=[table.pk]),
                {"auto_clean": "on", "auto_max_files": "7", "auto_max_bytes": "1234"},
                lambda queued: Table.objects.filter(pk=table.pk, auto_clean=True, auto_max_files=7).exists())


def _metadata_table_drop(table: Table, table_copy: Callable[[str], Path]) -> Case:
    from timeline.config import update_config

    lake = HudiTable.open(table.path)
    update_config(lake.storage, lake.base, {"hoodie.table.metadata.partitions": "files"})
    return Case(reverse("console:metadata_table_drop", args=[table.pk]), {"confirm": table.name},
                lambda queued: not HudiTable.open(table.path).config.metadata_partitions
                and AuditEvent.objects.filter(action="metadata_table.dropped", table=table).exists())


def _clean_run_pending(table: Table, table_copy: Callable[[str], Path]) -> Case:
    instant = "20260307135710000"
    return Case(reverse("console:clean_run_pending", args=[table.pk, instant]), {},
                lambda queued: table.jobs.filter(kind=Job.Kind.CLEAN, target=instant).exists() and len(queued) == 1)


def _retention_request(table: Table, table_copy: Callable[[str], Path]) -> Case:
    return Case(reverse("console:retention_request", args=[table.pk]), {"commits": "1..3", "hours": ""},
                lambda queued: table.retention_estimates.exists() and len(queued) == 1)


def _draft_repair(table: Table) -> int:
    """A repair of leftover markers waiting for approval (asked for by no one: any admin approves it)."""
    from console.services.health import repair_request

    leave_markers(Path(table.path.removeprefix("file:")))
    return repair_request(table=table, user=None, kind="leftover-markers").pk


def _repair_request(table: Table, table_copy: Callable[[str], Path]) -> Case:
    leave_markers(Path(table.path.removeprefix("file:")))
    return Case(reverse("console:repair_request", args=[table.pk, "leftover-markers"]), {},
                lambda queued: table.repairs.filter(status="draft").exists())


def _repair_approve(table: Table, table_copy: Callable[[str], Path]) -> Case:
    repair = _draft_repair(table)
    return Case(reverse("console:repair_approve", args=[table.pk, repair]), {},
                lambda queued: table.repairs.get(pk=repair).status == "approved" and len(queued) == 1)


def _repair_reject(table: Table, table_copy: Callable[[str], Path]) -> Case:
    repair = _draft_repair(table)
    return Case(reverse("console:repair_reject", args=[table.pk, repair]), {"note": "no"},
                lambda queued: table.repairs.get(pk=repair).status == "rejected")
def _archivable(table: Table) -> Table:
    """The table with writer options under which archival moves instants now."""
    Table.objects.filter(pk=table.pk).update(write_options=KEEP_FEW)
    table.refresh_from_db()
    return table


def _archival_request(table: Table, table_copy: Callable[[str], Path]) -> Case:
    _archivable(table)
    return Case(reverse("console:archival_request", args=[table.pk]), {},
                lambda queued: table.archivals.filter(status=ApprovalStatus.DRAFT).exists() and queued == [])


def _location_rerecord(table: Table, table_copy: Callable[[str], Path]) -> Case:
    """The table's folder replaced (restored from a backup: a new inode) and refused for it."""
    folder = Path(HudiTable.open(table.path).base)
    aside = folder.with_name(folder.name + ".old")
    folder.rename(aside)
    shutil.copytree(aside, folder, symlinks=True)
    with pytest.raises(Exception, match="is not the folder registered"):
        services.table_sync(table=table)
    return Case(reverse("console:location_rerecord", args=[table.pk]), {},
                lambda queued: Table.objects.get(pk=table.pk).folder_identity.endswith(f":{folder.stat().st_ino}"))


def _pending_archival(table: Table) -> int:
    requester = User.objects.create_user("archival-requester")
    return services.archival_request(table=_archivable(table), user=requester).pk


def _archival_approve(table: Table, table_copy: Callable[[str], Path]) -> Case:
    archival = _pending_archival(table)
    return Case(reverse("console:archival_approve", args=[table.pk, archival]), {},
                lambda queued: table.archivals.get(pk=archival).status == ApprovalStatus.APPROVED and len(queued) == 1)


def _archival_decline(table: Table, table_copy: Callable[[str], Path]) -> Case:
    archival = _pending_archival(table)
    return Case(reverse("console:archival_decline", args=[table.pk, archival]), {"note": "no"},
                lambda queued: table.archivals.get(pk=archival).status == ApprovalStatus.REJECTED)


MUTATIONS: dict[str, Prepare] = {
    "register": _register, "sync": _sync, "lock_break": _lock_break, "location_rerecord": _location_rerecord,
    "plan_request": _plan_request,
    "plan_approve": _plan_approve, "plan_reject": _plan_reject, "savepoint_create": _savepoint_create,
    "savepoint_delete": _savepoint_delete, "restore_run": _restore_run, "rollback_run": _rollback_run,
    "table_settings": _table_settings, "clean_run_pending": _clean_run_pending,
    "metadata_table_drop": _metadata_table_drop, "retention_request": _retention_request,
    "repair_request": _repair_request, "repair_approve": _repair_approve, "repair_reject": _repair_reject,
    "archival_request": _archival_request, "archival_approve": _archival_approve,
    "archival_decline": _archival_decline,
}
OPERATOR_MAY = {"sync", "plan_request", "savepoint_create", "retention_request", "repair_request",
                "archival_request"}


def named_patterns(patterns: list[Any], namespace: str = "") -> Iterator[tuple[str, URLPattern]]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from named_patterns(entry.url_patterns, inner)
        else:
            assert entry.name, f"{entry.pattern} has no name"
            yield f"{namespace}{entry.name}", entry


def test_views_post_only_urls_are_exactly_the_mutation_matrix() -> None:
    """GET every URL of the URLconf as an admin (ids of rows that do not exist: the GET views
    answer 404 or render, the POST-only ones 405). A new POST view fails here until it joins
    MUTATIONS; a mutation that stops being POST-only fails too."""
    admin = client_for("admin")
    answers = {}
    for name, pattern in named_patterns(get_resolver().url_patterns):
        if name.startswith("api:"):
            continue  # the REST API authenticates by token: its matrix is tests/console/api/test_api.py
        kwargs = {key: 999999 if type(converter).__name__ == "IntConverter" else "x"
                  for key, converter in pattern.pattern.converters.items()}
        answers[name] = admin.get(reverse(name, kwargs=kwargs)).status_code
    post_only = {name for name, status in answers.items() if status == 405}
    # a user's own API tokens (any role; tests/console/api/test_api.py) and the People page's changes
    # (their persona matrices: tests/console/views/test_people.py, services/test_people_grants.py,
    # services/test_lineage.py) are POST-only too
    people = {"console:people_create", "console:people_role", "console:people_email", "console:people_deactivate",
              "console:people_reactivate",
              "console:people_grant_confirm", "console:people_grant_decline", "console:people_link",
              "console:people_unlink"}
    # registering the tables a discovery found (its matrix: tests/console/views/test_discover_console.py)
    people |= {"console:discover_register", "console:bulk"}  # and the bulk actions (test_bulk.py)
    # the alert set-up's channels (their matrix: tests/console/views/test_alerts_setup.py)
    people |= {f"console:alert_channel_{change}" for change in ("add", "test", "on", "off", "remove")}
    # compactions, version changes and index repairs (their role matrices: tests/console/views/
    # test_compaction_page.py, test_versions_page.py, tests/console/services/test_index_health.py)
    people |= {f"console:{name}" for name in ("compaction_request", "compaction_approve", "compaction_reject",
                                               "version_rehearse", "version_request", "version_change_approve",
                                               "version_change_reject", "index_repair_request")}
    assert post_only == {f"console:{name}" for name in MUTATIONS} | {"logout", "console:token_create",
                                                                     "console:token_revoke"} | people, answers
    assert answers.pop("favicon") == 301  # to the static icon
    assert set(answers.values()) <= {200, 404, 405}, answers


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_views_role_matrix(name: str, persona: str, table: Table, table_copy,
                           django_capture_on_commit_callbacks) -> None:
    """Anonymous: sent to log in; outsider: 404; a role without the permission: 403; one
    with it: the view runs (a redirect, or the form again) and changes what it should."""
    url, data, done = MUTATIONS[name](table, table_copy)
    client = client_for(persona)
    token = csrf_token(client)
    with django_capture_on_commit_callbacks() as queued:
        response = client.post(url, {**data, "csrfmiddlewaretoken": token})
    allowed = persona == "admin" or (persona == "operator" and name in OPERATOR_MAY)
    if persona == "anonymous":
        assert response.status_code == 302 and response.url.startswith(reverse("login"))
    elif persona == "outsider":
        assert response.status_code == 404
    elif not allowed:
        assert response.status_code == 403
    else:
        assert response.status_code in (200, 302, 400)
        assert response.status_code != 302 or not response.url.startswith(reverse("login"))
    assert done(queued) is allowed, f"{persona} {'could not' if allowed else 'could'} {name}"


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_views_mutation_without_csrf_token_is_refused(name: str, table: Table, table_copy,
                                                      django_capture_on_commit_callbacks) -> None:
    url, data, done = MUTATIONS[name](table, table_copy)
    admin = client_for("admin")
    csrf_token(admin)  # the cookie is there; the form does not carry the token
    with django_capture_on_commit_callbacks() as queued:
        response = admin.post(url, data)
    assert response.status_code == 403 and b"CSRF" in response.content
    assert not done(queued)


def test_views_logout_is_post_only_with_csrf() -> None:
    admin = client_for("admin")
    token = csrf_token(admin)
    assert admin.post(reverse("logout")).status_code == 403
    assert admin.get(reverse("console:catalog")).status_code == 200
    assert admin.post(reverse("logout"), {"csrfmiddlewaretoken": token}).status_code == 302
    assert admin.get(reverse("console:catalog")).status_code == 302


def test_views_register_refuses_a_table_outside_the_allowed_roots(settings, tmp_path: Path, table_copy) -> None:
    """A readable Hudi table outside CLEANLINE_ALLOWED_ROOTS (a root that is only a prefix of
    its folder's name does not count) is refused with the reason, and nothing is registered."""
    outside = table_copy(TABLE)  # below tmp_path/copy
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path / "lake"), str(tmp_path / "cop")]
    admin = client_for("admin")
    response = admin.post(reverse("console:register"), {"path": str(outside), "csrfmiddlewaretoken": csrf_token(admin)})
    assert response.status_code == 400 and b"outside the allowed roots" in response.content
    assert not Table.objects.exists()
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path / "copy")]
    assert admin.post(reverse("console:register"), {"path": str(outside), "csrfmiddlewaretoken": csrf_token(admin)}
                      ).status_code == 302
    assert Table.objects.get().path.endswith(Path(TABLE).name)


def test_views_register_refusals_are_shown_and_success_redirects(table: Table, table_copy,
                                                                django_capture_on_commit_callbacks) -> None:
    admin = client_for("admin")
    refused = admin.post(reverse("console:register"), {"path": "/etc", "csrfmiddlewaretoken": csrf_token(admin)})
    assert refused.status_code == 400 and b"outside the allowed roots" in refused.content
    path = table_copy("sample_table/cow/v8_nonpartitioned")
    with django_capture_on_commit_callbacks(execute=True):
        done = admin.post(reverse("console:register"), {"path": str(path), "csrfmiddlewaretoken": csrf_token(admin)})
    assert done.status_code == 302
    registered = Table.objects.get(name="v8_nonpartitioned")
    assert registered.instants.count() > 0  # synced by the eager task on commit


def test_views_timeline_action_filter_lists_each_action_once(table: Table) -> None:
    from console import selectors

    assert selectors.actions_of(table) == sorted(set(table.instants.values_list("action", flat=True)))
