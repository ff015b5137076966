"""The REST API (/api/v1/, console/api/): every endpoint for every role (anonymous 401, viewer
403 on mutations, operator, admin), the two-person rule and a stale plan through the API, the
audit entries naming the token, JSON problem details, paging, the OpenAPI document validated by a
schema validator, tokens (hash only, revoked, deactivated user), and a scripted journey through
the API alone with a real Celery worker, followed by `cleanline --api` against the same console."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import PermissionDenied
from django.test import Client, TestCase
from openapi_spec_validator import validate

from console import services
from console.models import ApiToken, Archival, AuditEvent, CleanPlan, Job, Table
from console.models_approvals import ApprovalStatus
from console.models_compaction import Compaction
from console.models_health import Repair
from console.models_versions import VersionChange, VersionRehearsal
from console.selectors import stored_plan
from tests.console.helpers import ARCHIVABLE_TABLE, KEEP_FEW, SHORT_RETENTION, draft_plan, person, token_for, wait_for
from timeline import HudiTable

pytestmark = pytest.mark.django_db

TABLE = "sample_table/mor/avro/v9_txns_simple_nometa"
API = "/api/v1"


class Caller:
    """A test client sending one token."""

    def __init__(self, token: str | None) -> None:
        self.client = Client()
        self.headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}

    def __call__(self, method: str, path: str, body: dict[str, Any] | None = None, **query: Any) -> Any:
        call = getattr(self.client, method.lower())
        with TestCase.captureOnCommitCallbacks(execute=True):  # the tasks it queues run (eagerly) as on commit
            if method in ("GET", "DELETE"):
                return call(API + path, query, **self.headers)
            return call(API + path, json.dumps(body or {}), content_type="application/json", **self.headers)


@pytest.fixture
def callers(db) -> dict[str, Caller]:
    return {"anonymous": Caller(None), **{role: Caller(token_for(person(f"api-{role}", role)))
                                           for role in ("viewer", "operator", "admin")}}


def endpoints(table: Table, plan: CleanPlan, job: Job) -> list[tuple[str, str, dict[str, Any] | None, str]]:
    """(method, path, body, the least role allowed) of every endpoint."""
    t, p = table.pk, plan.pk
    commits = list(table.instants.filter(action__in=("commit", "deltacommit"), state="COMPLETED")
                   .order_by("requested_time").values_list("requested_time", flat=True))
    instant = table.instants.get(requested_time=commits[-1], action__in=("commit", "deltacommit"))
    kept, commit = commits[-1], commits[-2]  # a savepoint the restore preview reads; one created and deleted
    if not table.instants.filter(action="savepoint", requested_time=kept).exists():
        services.savepoint_create(table=table, user=None, instant_time=kept, comment="for the preview")
    r = Repair.objects.get_or_create(table=table, kind="leftover-markers")[0].pk  # a repair with nothing to change
    archival = (table.archivals.first() or Archival.objects.create(table=table)).pk  # approved by the admin's call
    rehearsal = VersionRehearsal.objects.create(table=table, from_version=9, target=8).pk
    change = VersionChange.objects.create(table=table, from_version=9, target=8).pk  # no rehearsal: nobody approves
    compaction = Compaction.objects.create(table=table).pk
    return [
        ("GET", f"/tables/{t}/health", None, "viewer"),
        ("GET", f"/tables/{t}/health/leftover-markers/repair", None, "viewer"),
        ("GET", f"/tables/{t}/repairs", None, "viewer"),
        ("GET", f"/tables/{t}/repairs/{r}", None, "viewer"),
        ("POST", f"/tables/{t}/health/leftover-markers/repair", None, "operator"),
        ("GET", f"/tables/{t}/indexes", None, "viewer"),
        ("POST", f"/tables/{t}/indexes/record_index/rebuild", None, "operator"),
        ("POST", f"/tables/{t}/repairs/{r}/approve", None, "admin"),
        ("POST", f"/tables/{t}/repairs/{r}/reject", {"note": "no"}, "admin"),
        ("GET", "/tables", None, "viewer"),
        ("GET", "/approvals", None, "viewer"),
        ("GET", "/history", None, "viewer"),
        ("GET", f"/tables/{t}/history", None, "viewer"),
        ("GET", f"/tables/{t}/services", None, "viewer"),
        ("GET", f"/tables/{t}/services/why", None, "viewer"),
        ("GET", f"/tables/{t}", None, "viewer"),
        ("GET", f"/tables/{t}/instants", None, "viewer"),
        ("GET", f"/tables/{t}/instants/{instant.pk}", None, "viewer"),
        ("GET", f"/tables/{t}/instants/{instant.pk}/files/completed", None, "viewer"),
        ("GET", f"/tables/{t}/file-groups", None, "viewer"),
        ("GET", f"/tables/{t}/plans", None, "viewer"),
        ("GET", f"/tables/{t}/plans/{p}", None, "viewer"),
        ("GET", f"/tables/{t}/plans/{p}/files", None, "viewer"),
        ("GET", f"/tables/{t}/plans/{p}/report.csv", None, "viewer"),
        ("GET", f"/tables/{t}/jobs", None, "viewer"),
        ("GET", f"/tables/{t}/jobs/{job.pk}", None, "viewer"),
        ("GET", f"/tables/{t}/savepoints", None, "viewer"),
        ("GET", f"/tables/{t}/restore/{kept}", None, "viewer"),
        ("GET", f"/tables/{t}/failed-writes", None, "viewer"),
        ("GET", f"/tables/{t}/archival", None, "viewer"),
        ("GET", f"/tables/{t}/archivals", None, "viewer"),
        ("GET", f"/tables/{t}/archivals/{archival}", None, "viewer"),
        ("GET", "/plans", None, "viewer"),
        ("GET", f"/plans/{p}", None, "viewer"),
        ("GET", "/audit", None, "viewer"),
        ("POST", "/tables", {"path": "/nowhere"}, "admin"),
        ("POST", f"/tables/{t}/sync", None, "operator"),
        ("POST", f"/tables/{t}/plans", SHORT_RETENTION, "operator"),
        ("POST", f"/tables/{t}/savepoints", {"instant": commit}, "operator"),
        ("DELETE", f"/tables/{t}/savepoints/{commit}", None, "admin"),
        ("POST", f"/tables/{t}/restore", {"savepoint": commit, "confirm": "wrong"}, "admin"),
        ("POST", f"/tables/{t}/rollback", {"instant": commit, "confirm": "wrong"}, "admin"),
        ("POST", f"/tables/{t}/plans/{p}/approve", None, "admin"),
        ("POST", f"/tables/{t}/plans/{p}/reject", {"note": "no"}, "admin"),
        ("POST", f"/tables/{t}/archivals", None, "operator"),
        ("POST", f"/tables/{t}/archivals/{archival}/approve", None, "admin"),
        ("POST", f"/tables/{t}/archivals/{archival}/decline", {"note": "no"}, "admin"),
        ("GET", f"/tables/{t}/version", None, "viewer"),
        ("GET", f"/tables/{t}/version/check?to=8", None, "viewer"),
        ("GET", f"/tables/{t}/version/rehearsals/{rehearsal}", None, "viewer"),
        ("GET", f"/tables/{t}/version-changes", None, "viewer"),
        ("GET", f"/tables/{t}/version-changes/{change}", None, "viewer"),
        ("POST", f"/tables/{t}/version/rehearsals", {"to": 8}, "operator"),
        ("POST", f"/tables/{t}/version-changes", {"to": 8}, "operator"),
        ("GET", f"/tables/{t}/compactions", None, "viewer"),
        ("GET", f"/tables/{t}/compactions/{compaction}", None, "viewer"),
        ("POST", f"/tables/{t}/compactions", None, "operator"),
        ("POST", f"/approvals/clean-plan/{p}/approve", None, "admin"),
        ("POST", f"/approvals/clean-plan/{p}/reject", {"note": "no"}, "admin"),
    ]


RANK = {"anonymous": -1, "viewer": 0, "operator": 1, "admin": 2}


def test_every_endpoint_answers_each_role_as_its_permissions_say(table: Table, callers: dict[str, Caller]) -> None:
    plan = draft_plan(table)
    job = Job.objects.create(table=table, kind=Job.Kind.CLEAN, target="0")
    listed = endpoints(table, plan, job)
    schema = Client().get(f"{API}/openapi.json").json()
    documented = {(m.upper(), p) for p, ops in schema["paths"].items() for m in ops}
    assert len(documented) == len(listed)  # every endpoint of the document is in the matrix
    for method, path, body, least in listed:
        for role, call in callers.items():
            response = call(method, path, body)
            if role == "anonymous":
                assert response.status_code == 401, (method, path)
                assert response["Content-Type"] == "application/problem+json"
                assert response.json()["status"] == 401 and response["WWW-Authenticate"] == "Bearer"
            elif RANK[role] < RANK[least]:
                assert response.status_code == 403, (role, method, path, response.content[:200])
                assert response.json()["title"] == "Forbidden"
            elif method == "GET":
                assert response.status_code == 200, (role, method, path, response.content[:300])
    assert stored_plan(plan).files and Table.objects.filter(pk=table.pk).exists()


def test_viewer_refusals_change_nothing(table: Table, callers: dict[str, Caller]) -> None:
    plan = draft_plan(table)
    listed = endpoints(table, plan, Job.objects.create(table=table, kind="clean", target="0"))
    before = (CleanPlan.objects.count(), Job.objects.count(), len(HudiTable.open(table.path).timeline))
    for method, path, body, _ in listed:
        if method != "GET":
            assert callers["viewer"](method, path, body).status_code == 403
    assert (CleanPlan.objects.count(), Job.objects.count(), len(HudiTable.open(table.path).timeline)) == before
    assert CleanPlan.objects.get(pk=plan.pk).status == ApprovalStatus.DRAFT


def test_role_is_checked_before_input(table: Table, callers: dict[str, Caller]) -> None:
    """A role that may not call an endpoint hears 403 whatever its input: not a 400 that tells
    it what the input lacks."""
    plan = draft_plan(table)
    listed = endpoints(table, plan, Job.objects.create(table=table, kind="clean", target="0"))
    for method, path, body, least in listed:
        if method == "GET" or body is None:
            continue
        for role in ("viewer", "operator"):
            if RANK[role] < RANK[least]:
                for bad in ({}, {"instant": ["not", "a", "string"], "commits_retained": "many"}):
                    response = callers[role](method, path, bad)
                    assert response.status_code == 403, (role, method, path, response.content[:200])
    # a role that may call it still hears what its input lacks
    assert callers["operator"]("POST", f"/tables/{table.pk}/savepoints", {}).status_code == 400


def test_two_person_rule_and_the_token_in_the_audit_log(table: Table) -> None:
    first, second = person("ada", "admin"), person("bob", "admin")
    ada, bob = Caller(token_for(first, "ada-laptop")), Caller(token_for(second, "bob-ci"))
    created = ada("POST", f"/tables/{table.pk}/plans", SHORT_RETENTION)
    assert created.status_code == 202, created.content
    plan_id = created.json()["id"]
    plan = CleanPlan.objects.get(pk=plan_id)
    assert plan.status == ApprovalStatus.DRAFT  # tasks run eagerly here
    refused = ada("POST", f"/tables/{table.pk}/plans/{plan_id}/approve")
    assert refused.status_code == 409 and refused["Content-Type"] == "application/problem+json"
    assert "approver must differ" in refused.json()["detail"]
    assert CleanPlan.objects.get(pk=plan_id).status == ApprovalStatus.DRAFT
    approved = bob("POST", f"/tables/{table.pk}/plans/{plan_id}/approve")
    assert approved.status_code == 202 and approved.json()["status"] == "approving", approved.content
    # the approval task (eager here) re-validated the plan, requested the clean and ran it
    assert CleanPlan.objects.get(pk=plan_id).status == ApprovalStatus.COMPLETED
    requested = AuditEvent.objects.get(action="clean.plan.requested", table=table)
    assert requested.username == "ada" and requested.parameters["api_token"] == "ada-laptop"
    asked = AuditEvent.objects.get(action="clean.plan.approval.requested", table=table)
    assert asked.username == "bob" and asked.parameters["api_token"] == "bob-ci"
    assert AuditEvent.objects.get(action="clean.plan.approved", table=table).username == "bob"  # by the task
    # a page's action right after is not attributed to any token
    client = Client()
    client.force_login(first)
    client.post(f"/tables/{table.pk}/sync")
    page_plan = services.plan_request(table=table, user=first, overrides=SHORT_RETENTION)
    assert "api_token" not in AuditEvent.objects.filter(action="clean.plan.requested").exclude(
        pk=requested.pk).get().parameters
    assert page_plan.pk != plan_id


def test_a_stale_plan_through_the_api(table: Table) -> None:
    operator, admin = Caller(token_for(person("op", "operator"))), Caller(token_for(person("boss", "admin")))
    body = {"policy": "KEEP_LATEST_FILE_VERSIONS", "file_versions_retained": 1, "allow_short_retention": True}
    plan_id = operator("POST", f"/tables/{table.pk}/plans", body).json()["id"]
    files = operator("GET", f"/tables/{table.pk}/plans/{plan_id}/files", show="delete", page_size=500).json()
    doomed = next(f for f in files["items"] if not f["file_name"].startswith("."))
    saved = operator("POST", f"/tables/{table.pk}/savepoints", {"instant": doomed["base_instant"], "comment": "keep"})
    assert saved.status_code == 201, saved.content
    asked = admin("POST", f"/tables/{table.pk}/plans/{plan_id}/approve")
    assert asked.status_code == 202 and asked.json()["status"] == "approving"
    stale = admin("GET", f"/tables/{table.pk}/plans/{plan_id}").json()  # the approval task has run
    assert stale["status"] == "stale" and stale["clean_instant"] == ""
    assert any(doomed["file_name"] in reason for reason in stale["stale_reasons"])
    again = admin("POST", f"/tables/{table.pk}/plans/{plan_id}/approve")
    assert again.status_code == 409 and "stale" in again.json()["detail"]
    assert not HudiTable.open(table.path).timeline.cleans()


def test_archival_through_the_api(console_table) -> None:
    """The plan and its blockers, a request, the two-person rule, the run (eager here) and its
    status, through the API alone, on a table whose writer options keep 2 to 3 commits."""
    table = console_table(ARCHIVABLE_TABLE)
    Table.objects.filter(pk=table.pk).update(write_options=KEEP_FEW)
    first, second = person("ada", "admin"), person("bob", "admin")
    ada, bob = Caller(token_for(first, "ada-laptop")), Caller(token_for(second, "bob-ci"))
    viewer = Caller(token_for(person("vera", "viewer")))
    plan = viewer("GET", f"/tables/{table.pk}/archival").json()
    assert (plan["active"], plan["archivable"], plan["active_after"], plan["blockers"]) == (11, 9, 2, [])
    commits = [i["requested_time"] for i in plan["instants"]]
    assert ada("POST", f"/tables/{table.pk}/savepoints", {"instant": commits[1]}).status_code == 201
    held = viewer("GET", f"/tables/{table.pk}/archival").json()
    [savepoint] = [b for b in held["blockers"] if b["kind"] == "savepoint"]
    assert savepoint["instant"] == commits[1] and savepoint["since"] and held["archivable"] == 1
    assert bob("DELETE", f"/tables/{table.pk}/savepoints/{commits[1]}").status_code == 200
    assert viewer("POST", f"/tables/{table.pk}/archivals").status_code == 403
    asked = ada("POST", f"/tables/{table.pk}/archivals")
    assert asked.status_code == 202 and asked.json()["status"] == "draft", asked.content
    archival = asked.json()["id"]
    assert [i["requested_time"] for i in asked.json()["instants"]] == commits
    assert ada("POST", f"/tables/{table.pk}/archivals").json()["id"] == archival  # a double submit
    refused = ada("POST", f"/tables/{table.pk}/archivals/{archival}/approve")
    assert refused.status_code == 409 and "approver must differ" in refused.json()["detail"]
    approved = bob("POST", f"/tables/{table.pk}/archivals/{archival}/approve", {"writers_stopped": False})
    assert approved.status_code == 202 and approved.json()["status"] == "approved", approved.content
    done = viewer("GET", f"/tables/{table.pk}/archivals/{archival}").json()  # the run (eager) is over
    assert done["status"] == "completed" and done["result"]["archived"] == 9 and done["decided_by"] == "bob"
    assert viewer("GET", f"/tables/{table.pk}").json()["active_instants"] == 2
    assert viewer("GET", f"/tables/{table.pk}/archivals", status="completed").json()["count"] == 1
    assert bob("POST", f"/tables/{table.pk}/archivals/{archival}/decline", {"note": "late"}).status_code == 409
    requested = AuditEvent.objects.get(action="archival.requested", table=table)
    assert requested.username == "ada" and requested.parameters["api_token"] == "ada-laptop"
    assert AuditEvent.objects.get(action="archival.approved", table=table).parameters["api_token"] == "bob-ci"
    nothing = ada("POST", f"/tables/{table.pk}/archivals")
    assert nothing.status_code == 409 and "Nothing to archive" in nothing.json()["detail"]


def test_paging_filters_and_problem_details(table: Table, callers: dict[str, Caller]) -> None:
    viewer = callers["viewer"]
    everything = viewer("GET", f"/tables/{table.pk}/instants", page_size=5).json()
    assert everything["count"] == table.instants.count() and len(everything["items"]) == 5
    assert everything["pages"] == -(-everything["count"] // 5)
    times = [i["requested_time"] for i in everything["items"]]
    assert times == sorted(times, reverse=True)
    commits = viewer("GET", f"/tables/{table.pk}/instants", action="deltacommit").json()
    assert commits["count"] == table.instants.filter(action="deltacommit").count() > 0
    assert {i["action"] for i in commits["items"]} == {"deltacommit"}
    past = viewer("GET", f"/tables/{table.pk}/instants", page=99, page_size=5)
    assert past.status_code == 404 and past.json()["status"] == 404
    missing = viewer("GET", "/tables/999999")
    assert missing.status_code == 404 and missing["Content-Type"] == "application/problem+json"
    bad = callers["admin"]("POST", f"/tables/{table.pk}/savepoints", {"instant": "yesterday"})
    assert bad.status_code == 400 and "instant" in bad.json()["detail"]
    instant = viewer("GET", f"/tables/{table.pk}/instants", action="deltacommit", page_size=1).json()["items"][0]
    detail = viewer("GET", f"/tables/{table.pk}/instants/{instant['id']}").json()
    assert detail["contents"] and detail["contents"][0]["content"]["partitionToWriteStats"]
    listed = viewer("GET", "/tables", q=table.name[:6], sort="-files").json()
    assert [t["id"] for t in listed["items"]] == [table.pk]


def test_tokens_store_only_a_hash_and_stop_working_when_revoked_or_the_user_is_deactivated(table: Table) -> None:
    user = person("tok", "viewer")
    token, secret = services.token_create(actor=user, owner=user, name="laptop")
    assert secret not in json.dumps(list(ApiToken.objects.values()), default=str)
    assert ApiToken.objects.get(pk=token.pk).digest != secret
    call = Caller(secret)
    assert call("GET", "/tables").status_code == 200
    assert ApiToken.objects.get(pk=token.pk).last_used_at is not None
    services.token_revoke(actor=user, token=token)
    assert call("GET", "/tables").status_code == 401
    other, other_secret = services.token_create(actor=user, owner=user, name="second")
    user.is_active = False
    user.save()
    assert Caller(other_secret)("GET", "/tables").status_code == 401
    with pytest.raises(PermissionDenied):
        services.token_create(actor=person("nosy", "operator"), owner=user, name="x")
    with pytest.raises(PermissionDenied, match="Only an admin"):
        services.token_revoke(actor=person("nosy2", "operator"), token=other)
    assert [e.action for e in AuditEvent.objects.order_by("pk")][-3:] == [
        "api_token.created", "api_token.revoked", "api_token.created"]


def test_tokens_page_creates_shows_once_and_revokes(db) -> None:
    """Each user creates their own tokens (an admin holding another user's secret could act as
    them, past the two-person rule); an admin lists and revokes anyone's."""
    admin, other = person("root", "admin"), person("someone", "viewer")
    mine = Client()
    mine.force_login(other)
    page = mine.post("/tokens/create", {"name": "laptop", "owner": admin.pk})  # the owner field is ignored
    assert page.status_code == 200
    secret = page.context["secret"]
    assert secret.startswith("cl_") and secret in page.content.decode()
    token = ApiToken.objects.get(name="laptop")
    assert token.user == other
    assert Caller(secret)("GET", "/tables").status_code == 200
    assert secret not in mine.get("/tokens").content.decode()  # shown once
    with pytest.raises(PermissionDenied):
        services.token_create(actor=admin, owner=other, name="for someone")
    client = Client()
    client.force_login(admin)
    assert b"laptop" in client.get("/tokens").content  # an admin sees everyone's
    client.post(f"/tokens/{token.pk}/revoke")
    assert Caller(secret)("GET", "/tables").status_code == 401
    viewer = Client()
    viewer.force_login(person("v2", "viewer"))
    other_token, _ = services.token_create(actor=admin, owner=admin, name="admin's")
    assert viewer.post(f"/tokens/{other_token.pk}/revoke").status_code == 403
    assert mine.post("/tokens/create", {"name": "laptop"}).status_code == 400  # the name is taken


def no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object hook that refuses a key given twice (as Swagger UI's YAML parser does:
    "duplicated mapping key"); json.loads alone keeps the last."""
    keys = [key for key, _ in pairs]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        raise ValueError(f"duplicated keys {twice} in an object with keys {keys}")
    return dict(pairs)


def test_openapi_document_validates_and_docs_are_served_locally(db) -> None:
    response = Client().get(f"{API}/openapi.json")
    assert response.status_code == 200
    document = json.loads(response.content, object_pairs_hook=no_duplicate_keys)
    validate(document)  # openapi-spec-validator: a valid OpenAPI 3 document
    assert document["openapi"].startswith("3.") and document["components"]["securitySchemes"]
    docs = Client().get(f"{API}/docs")
    assert docs.status_code == 200 and b"cdn." not in docs.content and b"/static/ninja/" in docs.content


@pytest.mark.django_db(transaction=True)
def test_openapi_docs_render_in_chromium_without_an_error(browser, live_server) -> None:  # noqa: F811
    """Swagger UI at /api/v1/docs (served from the console's static files) draws every
    operation and no error box ("duplicated mapping key / Unable to render this definition")."""
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{live_server.url}{API}/docs")
    page.wait_for_selector(".opblock", timeout=30_000)
    page.wait_for_load_state("networkidle")
    text = page.locator("body").inner_text()
    assert "duplicated mapping key" not in text and "Unable to render" not in text, text[:2000]
    assert page.locator(".errors-wrapper, .swagger-ui .errors").count() == 0 and not errors
    document = Client().get(f"{API}/openapi.json").json()
    operations = sum(len(methods) for methods in document["paths"].values())
    assert page.locator(".opblock").count() == operations
    page.close()


@pytest.mark.django_db(transaction=True)
def test_scripted_journey_through_the_api_alone_with_a_real_worker(start_worker, live_server, settings,
                                                                   tmp_path: Path, table_copy) -> None:
    """Register, plan, approve with a second user's token, follow the job to completion, fetch
    the report: the files deleted equal the plan's. Then `cleanline --api` reads the table."""
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    path = table_copy(TABLE)
    start_worker()
    operator, admin = token_for(person("op", "operator")), token_for(person("boss", "admin"))
    token_for(person("reg", "admin"), "register")

    def call(token: str, method: str, route: str, body: dict[str, Any] | None = None) -> Any:
        request = urllib.request.Request(f"{live_server.url}{API}{route}", method=method,
                                         data=None if body is None else json.dumps(body).encode(),
                                         headers={"Authorization": f"Bearer {token}",
                                                  "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read()
            return raw if route.endswith(".csv") else json.loads(raw)

    registered = call(admin, "POST", "/tables", {"path": str(path)})
    table_id = registered["id"]
    assert AuditEvent.objects.get(action="table.registered").parameters["api_token"] == "ci"
    wait_for(lambda: call(operator, "GET", f"/tables/{table_id}")["sync_status"] == "ok", 120, "the sync")
    plan = call(operator, "POST", f"/tables/{table_id}/plans", SHORT_RETENTION)
    wait_for(lambda: call(operator, "GET", f"/tables/{table_id}/plans/{plan['id']}")["status"] == "draft", 120,
             "the plan")
    planned = {(f["partition"], f["file_name"]) for f in _all_files(call, operator, table_id, plan["id"])}
    assert planned and all((path / p / n).exists() for p, n in planned)
    approved = call(admin, "POST", f"/tables/{table_id}/plans/{plan['id']}/approve")
    assert approved["status"] == "approving"  # the worker re-validates it, then runs the clean
    wait_for(lambda: call(operator, "GET", f"/tables/{table_id}/plans/{plan['id']}")["status"] == "completed", 180,
             "the clean")
    done = call(operator, "GET", f"/tables/{table_id}/plans/{plan['id']}")
    assert done["progress_done"] == len(planned) and done["progress_bytes"] == done["bytes_to_delete"]
    report = call(operator, "GET", f"/tables/{table_id}/plans/{plan['id']}/report.csv").decode().splitlines()
    deleted = {tuple(line.split(",")[:2]) for line in report[1:] if ",delete," in line and ",deleted," in line}
    assert deleted == planned
    assert not any((path / p / n).exists() for p, n in planned)
    assert all(f.exists() for f in path.rglob("*.parquet"))  # what remains is what the plan kept

    call(operator, "POST", f"/tables/{table_id}/sync")
    wait_for(lambda: any(i["action"] == "clean" and i["state"] == "COMPLETED" for i in call(
        operator, "GET", f"/tables/{table_id}/instants?action=clean")["items"]), 120, "the sync after the clean")
    wait_for(lambda: call(operator, "GET", f"/tables/{table_id}")["sync_status"] == "ok", 120, "the sync")
    cli = [sys.executable, "-m", "timeline.cli", "--api", live_server.url, "--token", operator]
    listed = json.loads(subprocess.run([*cli, "tables", "--json"], capture_output=True, text=True, check=True).stdout)
    assert [t["id"] for t in listed] == [table_id]
    remote = json.loads(subprocess.run([*cli, "timeline", str(table_id), "--json"], capture_output=True, text=True,
                                       check=True).stdout)
    local = json.loads(subprocess.run([sys.executable, "-m", "timeline.cli", "timeline", str(path), "--json"],
                                      capture_output=True, text=True, check=True).stdout)
    assert [(i["requestedTime"], i["action"], i["state"]) for i in remote if not i["archived"]] == [
        (i["requestedTime"], i["action"], i["state"]) for i in local]
    refused = subprocess.run([*cli, "clean", "run", str(table_id)], capture_output=True, text=True)
    assert refused.returncode == 2 and "does not run through --api" in refused.stderr
    bad = subprocess.run([*cli[:-1], "not-a-token", "tables"], capture_output=True, text=True)
    assert bad.returncode == 2 and "401" in bad.stderr


def _all_files(call: Any, token: str, table_id: int, plan_id: int) -> list[dict[str, Any]]:
    first = call(token, "GET", f"/tables/{table_id}/plans/{plan_id}/files?show=delete&page_size=500")
    items = list(first["items"])
    for page in range(2, first["pages"] + 1):
        items += call(token, "GET", f"/tables/{table_id}/plans/{plan_id}/files?show=delete&page_size=500"
                      f"&page={page}")["items"]
    return items
