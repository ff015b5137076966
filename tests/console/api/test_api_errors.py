"""The REST API's errors as RFC 9457 problem details (issue 30): 400 for every filter or sort
outside its choices and every time that is not one (never an empty or unfiltered list), JSON
for a mistyped path or a method an endpoint does not take, and refusals in the API's words
(the JSON field to send, not a box to tick)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from console import services
from console.models import Table
from tests.console.helpers import SHORT_RETENTION, person

pytestmark = pytest.mark.django_db

API = "/api/v1"


def caller(role: str) -> Client:
    user = person(f"api-{role}", role)
    return Client(HTTP_AUTHORIZATION=f"Bearer {services.token_create(actor=user, owner=user, name='ci')[1]}")


def is_problem(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json", response.content
    body: dict[str, Any] = response.json()
    assert body["status"] == status and body["title"] and body["detail"]
    return body


@pytest.mark.parametrize(("path", "query", "named"), [
    ("/tables/{t}/instants", {"since": "yesterday"}, "since"),
    ("/tables/{t}/instants", {"since": "2025-13-45"}, "since"),
    ("/tables/{t}/instants", {"until": "2025-02-30T10:00"}, "until"),
    ("/tables/{t}/instants", {"action": "bogus"}, "action"),
    ("/tables/{t}/instants", {"state": "finished"}, "state"),
    ("/tables/{t}/plans/{p}/files", {"show": "bogus"}, "show"),
    ("/tables", {"sort": "size"}, "sort"),
    ("/tables/{t}/plans", {"status": "waiting"}, "status"),
    ("/tables/{t}/jobs", {"status": "done"}, "status"),
    ("/audit", {"table": "orders"}, "table"),
])
def test_api_errors_every_invalid_filter_or_sort_is_a_400_naming_it(
        table: Table, path: str, query: dict[str, str], named: str) -> None:
    plan = services.plan_build(plan=services.plan_request(table=table, user=None, overrides=SHORT_RETENTION))
    body = is_problem(caller("viewer").get(API + path.format(t=table.pk, p=plan.pk), query), 400)
    (value,) = query.values()
    assert f"query.{named}: {named}={value!r}" in body["detail"], body["detail"]


def test_api_errors_valid_filters_still_answer(table: Table) -> None:
    viewer = caller("viewer")
    newest = table.instants.order_by("-requested_time")[0]
    day = f"{newest.requested_time[:4]}-{newest.requested_time[4:6]}-{newest.requested_time[6:8]}"
    for query in ({"since": day}, {"since": newest.requested_time[:8]}, {"action": newest.action},
                  {"state": newest.state.lower()}, {"until": f"{day}T23:59"}):
        answer = viewer.get(f"{API}/tables/{table.pk}/instants", query)
        assert answer.status_code == 200 and answer.json()["count"] >= 1, (query, answer.content)
    assert viewer.get(f"{API}/tables", {"sort": "-bytes"}).status_code == 200


@pytest.mark.parametrize("path", ["/api/v1/tablez", "/api/v1/tables/1/nothing", "/api/v2/tables", "/api/"])
def test_api_errors_a_mistyped_path_is_a_json_404(db, path: str) -> None:
    for client in (Client(), caller("viewer")):
        body = is_problem(client.get(path), 404)
        assert "/api/v1/docs" in body["detail"] and b"<html" not in client.get(path).content


def test_api_errors_a_method_an_endpoint_does_not_take_is_a_json_405(db) -> None:
    body = is_problem(caller("viewer").delete(f"{API}/tables"), 405)
    assert "DELETE is not allowed" in body["detail"] and "GET" in body["detail"]


def test_api_errors_refusals_name_the_field_to_send(table: Table) -> None:
    admin = caller("admin")
    short = admin.post(f"{API}/tables/{table.pk}/plans", {"policy": "KEEP_LATEST_COMMITS", "commits_retained": 1},
                       content_type="application/json")
    detail = is_problem(short, 409)["detail"]
    assert '"allow_short_retention": true' in detail and "tick" not in detail
    huge = admin.post(f"{API}/tables/{table.pk}/plans", {"commits_retained": 10**30}, content_type="application/json")
    assert f"is above {table.instants.count()}, the table's instant count" in is_problem(huge, 409)["detail"]
    savepoint = table.instants.filter(action="commit", state="COMPLETED").order_by("requested_time").first()
    assert savepoint is not None
    services.savepoint_create(table=table, user=None, instant_time=savepoint.requested_time, comment="")
    restore = admin.post(f"{API}/tables/{table.pk}/restore", {"savepoint": savepoint.requested_time, "confirm": "no"},
                         content_type="application/json")
    detail = is_problem(restore, 409)["detail"]
    assert f'Send "confirm": "{table.name}"' in detail and "Type" not in detail
    rollback = admin.post(f"{API}/tables/{table.pk}/rollback", {"instant": "20990101000000000", "confirm": ""},
                          content_type="application/json")
    assert 'Send "confirm": "20990101000000000"' in is_problem(rollback, 409)["detail"]
    missing = admin.post(f"{API}/tables/{table.pk}/rollback", {"instant": "20990101000000000"},
                         content_type="application/json")
    assert is_problem(missing, 400)["detail"] == "body.confirm: Field required"
    # a live writer and no lock known: the override is a field of the body, not a CLI option
    live = "20300101000000000"
    folder = Path(table.path.removeprefix("file:")) / ".hoodie"
    (folder / "timeline" / f"{live}.commit.requested").write_bytes(b"")
    (folder / ".heartbeat").mkdir(exist_ok=True)
    (folder / ".heartbeat" / live).write_bytes(b"")
    os.utime(folder / ".heartbeat" / live, (time.time() - 1, time.time() - 1))
    commit = table.instants.filter(action="commit", state="COMPLETED").order_by("requested_time").last()
    assert commit is not None
    refused = admin.post(f"{API}/tables/{table.pk}/savepoints", {"instant": commit.requested_time},
                         content_type="application/json")
    detail = is_problem(refused, 409)["detail"]
    assert 'send "writers_stopped": true' in detail and "--writers-stopped" not in detail and live in detail


def test_api_errors_every_list_answers_a_page_that_names_none_with_a_404(table: Table) -> None:
    """Issue 38: 0, a negative page and one far past the end are a 404 on every paged list (a
    page that is not a number is the schema's 400), each answered at once."""
    plan = services.plan_build(plan=services.plan_request(table=table, user=None, overrides=SHORT_RETENTION))
    viewer = caller("viewer")
    lists = ["/tables", "/tables/{t}/instants", "/audit", "/plans", "/tables/{t}/plans", "/tables/{t}/plans/{p}/files",
             "/tables/{t}/jobs", "/tables/{t}/archivals", "/approvals"]
    for path in (API + p.format(t=table.pk, p=plan.pk) for p in lists):
        assert viewer.get(path, {"page": 1}).status_code == 200, path
        for page in (0, -1, 999999999999):
            started = time.monotonic()
            body = is_problem(viewer.get(path, {"page": page}), 404)
            assert time.monotonic() - started < 1 and "page" in body["detail"].lower(), (path, body)
        assert "query.page" in is_problem(viewer.get(path, {"page": "x"}), 400)["detail"]
