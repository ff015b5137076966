"""The CLI's commands against a remote Cleanline console (`cleanline --api URL --token T ...`):
its REST API (/api/v1/), with a personal API token; PATH names a registered table by id, name or
path. The read commands, and the write commands a scheduler needs (a clean plan requested,
followed, approved through the one approval workflow; an archival or a repair requested).
Standard library HTTP only (the library's dependencies name no HTTP client); errors are the API's
problem details, on one line."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from typing import Any

from timeline.exceptions import CleanlineError

TIMEOUT_SECONDS = 30


class RemoteError(CleanlineError):
    """The console refused the call or could not be reached. `exit_code`: 1 when the console
    refused a well-formed call (403, 409: not allowed, the two-person rule, not waiting), 2
    otherwise (bad input, unknown id, bad token, unreachable)."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


REFUSED = (403, 409)  # answers that mean "no" to a well-formed call (exit 1)


class ConsoleClient:
    """GETs against one console's API as one token."""

    def __init__(self, url: str, token: str) -> None:
        if not url.startswith(("http://", "https://")):
            raise RemoteError(f"--api {url!r}: expected the console's http(s):// address")
        if not token:
            raise RemoteError("--api needs a personal API token: --token T or CLEANLINE_API_TOKEN")
        self.base = url.rstrip("/") + "/api/v1"
        self.token = token

    def get(self, path: str, **params: Any) -> Any:
        query = urllib.parse.urlencode({k: v for k, v in params.items() if v not in (None, "")})
        return self._call("GET", f"{path}{'?' + query if query else ''}", None)

    def post(self, path: str, body: Mapping[str, Any] | None = None) -> Any:
        return self._call("POST", path, json.dumps(dict(body or {})).encode())

    def _call(self, method: str, path: str, data: bytes | None) -> Any:
        request = urllib.request.Request(f"{self.base}{path}", method=method, data=data, headers={
            "Authorization": f"Bearer {self.token}", "Accept": "application/json",
            **({"Content-Type": "application/json"} if data is not None else {})})
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:  # noqa: S310 (http(s) only)
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise RemoteError(f"{self.base}{path}: {exc.code} {_detail(exc.read())}",
                              1 if exc.code in REFUSED else 2) from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise RemoteError(f"{self.base}{path}: cannot reach the console ({exc})") from exc

    def pages(self, path: str, **params: Any) -> Iterator[dict[str, Any]]:
        """Every item of a paged list."""
        page = 1
        while True:
            body = self.get(path, page=page, page_size=500, **params)
            yield from body["items"]
            if page >= body["pages"]:
                return
            page += 1

    def table(self, name: str) -> dict[str, Any]:
        """The registered table `name` names: its name or its path, else (all digits) its id."""
        matches = [t for t in self.pages("/tables", q=name) if name in (t["name"], t["path"])]
        if not matches and name.isdigit():  # no table is named so: its id
            found: dict[str, Any] = self.get(f"/tables/{name}")
            return found
        if len(matches) != 1:
            raise RemoteError(f"{self.base}: {'no' if not matches else 'more than one'} registered table named "
                              f"{name!r} (use its id)")
        return matches[0]


def _detail(body: bytes) -> str:
    try:
        problem: Mapping[str, Any] = json.loads(body)
        text = f"{problem.get('title', '')}: {problem.get('detail', '')}".strip(": ")
    except (ValueError, AttributeError):
        text = body.decode(errors="replace")[:200]
    return " ".join(text.split())  # one line


def tables(client: ConsoleClient) -> list[dict[str, Any]]:
    """The console's registered tables, as the API gives them."""
    return list(client.pages("/tables"))


def instants(client: ConsoleClient, table: Mapping[str, Any], **filters: str) -> list[dict[str, Any]]:
    """The console's mirror of a table's timeline (active and archived), oldest first (the
    local `timeline --reverse` order)."""
    return list(reversed(list(client.pages(f"/tables/{table['id']}/instants", **filters))))


def savepoints(client: ConsoleClient, table: Mapping[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = client.get(f"/tables/{table['id']}/savepoints")
    return found


def instant_detail(client: ConsoleClient, table: Mapping[str, Any], instant: str, action: str | None
                   ) -> dict[str, Any]:
    """One instant with its decoded state files (newest state first)."""
    rows = [r for r in instants(client, table, search=instant)
            if r["requested_time"] == instant and (action is None or r["action"] == action)]
    if not rows:
        raise RemoteError(f"{table['path']}: no instant {instant} in the console's timeline of {table['name']}")
    found: dict[str, Any] = client.get(f"/tables/{table['id']}/instants/{rows[-1]['id']}")
    return found


# `plan wait --until`: the states at which each stage is reached (a later stage reaches the earlier
# ones), and the states from which the wanted stage is never reached (exit 1). The states are
# console.models_approvals.ApprovalStatus: planning > draft > approving > approved > running >
# completed | failed | stale | rejected.
REACHED = {"reviewable": ("draft", "approving", "approved", "running", "completed"),
           "approved": ("approved", "running", "completed"), "completed": ("completed",), "failed": ("failed",)}
GIVEN_UP = ("failed", "stale", "rejected")
IN_FLIGHT = ("approving", "approved", "running", "completed")  # `plan run`: the console runs it


class WaitTimeout(RemoteError):
    """`plan wait` ran out of time (exit 3)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, 3)


def request_plan(client: ConsoleClient, table: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """POST /tables/{id}/plans: a worker builds the plan (`planning`, then `draft`)."""
    plan: dict[str, Any] = client.post(f"/tables/{table['id']}/plans", overrides)
    return plan


def plan(client: ConsoleClient, plan_id: int) -> dict[str, Any]:
    found: dict[str, Any] = client.get(f"/plans/{plan_id}")
    return found


def approve(client: ConsoleClient, kind: str, change_id: int, note: str = "") -> dict[str, Any]:
    """The one approval workflow's endpoint (`kind`: clean-plan, archival, repair): the console
    refuses (409) the token's owner approving what they requested, or an account of theirs did."""
    decided: dict[str, Any] = client.post(f"/approvals/{kind}/{change_id}/approve", {"note": note})
    return decided


def wait_plan(client: ConsoleClient, plan_id: int, until: str, timeout: float, *, first_sleep: float = 0.5,
              max_sleep: float = 10.0) -> dict[str, Any]:
    """Poll the plan, sleeping 0.5 s then twice as long each time (at most `max_sleep`), until
    it reaches `until` (returned); RemoteError (exit 1) when it can no longer get there (failed,
    stale, rejected; a draft whose approval's check was refused when waiting past review);
    WaitTimeout after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    sleep = first_sleep
    while True:
        found = plan(client, plan_id)
        status = found["status"]
        if status in REACHED[until]:
            return found
        if status in GIVEN_UP or (status == "draft" and until in ("approved", "completed") and found["error"]):
            why = found["error"] or "; ".join(found["stale_reasons"][:3]) or found["decision_note"]
            raise RemoteError(f"plan {plan_id} is {status}, it will not be {until}{': ' + why if why else ''}", 1)
        left = deadline - time.monotonic()
        if left <= 0:
            raise WaitTimeout(f"plan {plan_id} is still {status} after {timeout:g} s (waiting for {until})")
        time.sleep(min(sleep, left))
        sleep = min(sleep * 2, max_sleep)


def request_archival(client: ConsoleClient, table: Mapping[str, Any]) -> dict[str, Any]:
    """POST /tables/{id}/archivals: planned in the request, it waits for another admin's approval."""
    requested: dict[str, Any] = client.post(f"/tables/{table['id']}/archivals")
    return requested


def request_repair(client: ConsoleClient, table: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """POST /tables/{id}/health/{kind}/repair: the doctor's repair of every finding of `kind`."""
    requested: dict[str, Any] = client.post(f"/tables/{table['id']}/health/{urllib.parse.quote(kind, safe='')}"
                                            "/repair")
    return requested


__all__ = ["ConsoleClient", "RemoteError", "WaitTimeout", "approve", "instant_detail", "instants", "plan",
           "request_archival", "request_plan", "request_repair", "savepoints", "tables", "wait_plan"]
