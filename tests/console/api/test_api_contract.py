"""The API as a contract (issue 44): Schemathesis generates input for every operation of the
OpenAPI document and sends it in-process (WSGI) to the console, with a viewer's, an operator's or
an admin's personal API token, against a seeded database holding a real fixture table: no answer
is a 5xx, every answer's status code and body fit the document, and every error is
`application/problem+json`. Bounded (a few derandomized examples per operation, no shrinking), so
it stays fast and stable in CI; the regression tests for what it found sit beside it."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.test import Client
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from console.models import Archival, Job, Table
from console.models_health import Repair
from tests.console.helpers import draft_plan, person, token_for

pytestmark = pytest.mark.django_db

TABLE = "sample_table/mor/avro/v9_txns_simple_nometa"
API = "/api/v1"
# Per operation, roles drawn among them; CLEANLINE_CONTRACT_EXAMPLES=100 for a longer hunt by hand.
EXAMPLES = int(os.environ.get("CLEANLINE_CONTRACT_EXAMPLES", "6"))


def real_ids(table: Table) -> dict[str, Any]:
    """Path parameters naming rows that exist, so generated calls reach past the 404s."""
    plan = draft_plan(table)
    job = Job.objects.create(table=table, kind=Job.Kind.CLEAN, target="0")
    instant = table.instants.filter(action__in=("commit", "deltacommit"), state="COMPLETED").order_by(
        "requested_time").last()
    assert instant is not None
    repair = Repair.objects.get_or_create(table=table, kind="leftover-markers")[0]
    archival = Archival.objects.create(table=table)
    return {"table_id": table.pk, "plan_id": plan.pk, "job_id": job.pk, "instant_id": instant.pk,
            "repair_id": repair.pk, "archival_id": archival.pk, "instant": instant.requested_time,
            "instant_time": instant.requested_time, "savepoint": instant.requested_time, "kind": "leftover-markers",
            "check": "leftover-markers", "index": "record_index", "action": "rebuild", "state": "completed",
            "change_id": plan.pk}


@pytest.fixture
def wsgi(settings: Any) -> Iterator[Any]:
    """The console's WSGI app, called in the test's transaction: as Django's test client does, a
    request does not close the test's database connection."""
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "localhost"]  # the host Schemathesis' WSGI client sends
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    try:
        yield get_wsgi_application()
    finally:
        for signal in (request_started, request_finished):
            signal.connect(close_old_connections)


def test_every_operation_keeps_its_contract(table: Table, wsgi: Any) -> None:
    schema = schemathesis.openapi.from_wsgi(f"{API}/openapi.json", wsgi)
    tokens = {role: token_for(person(f"contract-{role}", role)) for role in ("viewer", "operator", "admin")}
    ids = real_ids(table)
    checks = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 40  # every operation of the document, not a few
    failures: dict[tuple[str, int, str], str] = {}  # (operation, status, what) -> one example

    def contract(operation: Any) -> Any:
        """One operation's bounded run, input that fits the document and input that does not:
        derandomized, no shrinking, every failure recorded."""
        label = operation.label

        cases = st.one_of(operation.as_strategy(generation_mode=GenerationMode.POSITIVE),
                          operation.as_strategy(generation_mode=GenerationMode.NEGATIVE))

        @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
                  phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
        @given(case=cases, role=st.sampled_from(sorted(tokens)), real=st.booleans())
        def run(case: Any, role: str, real: bool) -> None:
            if real:
                for name in case.path_parameters or {}:
                    if name in ids:
                        case.path_parameters[name] = ids[name]
                if label.startswith("POST /api/v1/approvals/"):  # a change of the one workflow: the plan
                    case.path_parameters["kind"] = "clean-plan"
            response = case.call(headers={"Authorization": f"Bearer {tokens[role]}"})
            where = f"{role} {case.method} {case.formatted_path} {case.path_parameters} {case.query} {case.body!r}"
            try:
                case.validate_response(response, checks=checks)
            except (Exception, BaseExceptionGroup) as failure:  # noqa: BLE001  every failure listed, not only the first
                what = " ".join(re.findall(r"- (ST\d+ [^\n]*)", str(failure))) or type(failure).__name__
                failures.setdefault((label, response.status_code, what), f"{where}: {str(failure)[:500]}")
                return
            sent = {k.lower(): v for k, v in response.headers.items()}.get("content-type", [""])[0]
            if response.status_code >= 400 and not sent.startswith("application/problem+json"):
                failures.setdefault((label, response.status_code, f"{sent}, not problem+json"), where)

        return run

    for operation in operations:
        contract(operation)()
    assert not failures, "\n".join(f"{k}" for k in failures) + "\n\n" + "\n\n".join(list(failures.values())[:8])


# What the contract run found, each held by its own test.

def test_errors_are_documented_as_the_problem_details_they_are(table: Table) -> None:
    """Found: every error answer is `application/problem+json`, while the document said
    `application/json` (Schemathesis ST105 on every 401/403/404/409)."""
    document = Client().get(f"{API}/openapi.json").json()
    errors = [(path, method, status, response) for path, operations in document["paths"].items()
              for method, operation in operations.items() for status, response in operation["responses"].items()
              if status[0] in "45"]
    assert len(errors) > 100
    for path, method, status, response in errors:
        assert list(response["content"]) == ["application/problem+json"], (method, path, status)
    caller = Client(HTTP_AUTHORIZATION=f"Bearer {token_for(person('contract-viewer', 'viewer'))}")
    answer = caller.get(f"{API}/tables/{table.pk + 1000}")
    assert answer.status_code == 404 and answer["Content-Type"] == "application/problem+json"


def test_refused_input_is_documented_as_400(table: Table) -> None:
    """Found: a query value outside its choices (`GET /tables?sort=...`) answers 400, which the
    document did not list (Schemathesis ST103): every operation taking input now lists it."""
    document = Client().get(f"{API}/openapi.json").json()
    caller = Client(HTTP_AUTHORIZATION=f"Bearer {token_for(person('contract-viewer', 'viewer'))}")
    answer = caller.get(f"{API}/tables", {"sort": "not-a-column"})
    assert answer.status_code == 400 and answer["Content-Type"] == "application/problem+json"
    assert "400" in document["paths"]["/api/v1/tables"]["get"]["responses"]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            if operation.get("parameters") or "requestBody" in operation:
                assert "400" in operation["responses"], (method, path)
