"""The CLI's read commands against a remote Cleanline console (`cleanline --api URL --token T
...`): its REST API (/api/v1/), with a personal API token; PATH names a registered table by id,
name or path. Standard library HTTP only; errors are the API's problem details."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from typing import Any

from timeline.exceptions import CleanlineError

TIMEOUT_SECONDS = 30


class RemoteError(CleanlineError):
    """The console refused the call or could not be reached."""


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
        request = urllib.request.Request(f"{self.base}{path}{'?' + query if query else ''}", headers={
            "Authorization": f"Bearer {self.token}", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:  # noqa: S310 (http(s) only)
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise RemoteError(f"{self.base}{path}: {exc.code} {_detail(exc.read())}") from exc
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
        """The registered table `name` names: its id, its name, or its path."""
        if name.isdigit():
            found: dict[str, Any] = self.get(f"/tables/{name}")
            return found
        matches = [t for t in self.pages("/tables", q=name) if name in (t["name"], t["path"])]
        if len(matches) != 1:
            raise RemoteError(f"{self.base}: {'no' if not matches else 'more than one'} registered table named "
                              f"{name!r} (use its id)")
        return matches[0]


def _detail(body: bytes) -> str:
    try:
        problem: Mapping[str, Any] = json.loads(body)
        return f"{problem.get('title', '')}: {problem.get('detail', '')}".strip(": ")
    except (ValueError, AttributeError):
        return body.decode(errors="replace")[:200]


def instant_json(row: Mapping[str, Any]) -> dict[str, Any]:
    """An instant as the local `timeline --json` prints it."""
    return {"requestedTime": row["requested_time"], "completionTime": row["completion_time"] or None,
            "action": row["action"], "state": row["state"]}


def tables(client: ConsoleClient) -> list[dict[str, Any]]:
    return [{"id": t["id"], "name": t["name"], "path": t["path"], "tableType": t["table_type"],
             "tableVersion": t["table_version"], "syncStatus": t["sync_status"], "files": t["total_files"],
             "bytes": t["total_bytes"], "failedWrites": t["failed_writes"]} for t in client.pages("/tables")]


def table_info(client: ConsoleClient, name: str) -> dict[str, Any]:
    t = client.table(name)
    return {"id": t["id"], "path": t["path"], "name": t["name"], "tableType": t["table_type"],
            "tableVersion": t["table_version"], "metadataTableEnabled": t["metadata_table_enabled"],
            "syncStatus": t["sync_status"], "syncedAt": t["synced_at"], "files": t["total_files"],
            "bytes": t["total_bytes"], "failedWrites": t["failed_writes"]}


def timeline(client: ConsoleClient, name: str) -> list[dict[str, Any]]:
    """The console's mirror of the table's timeline (active and archived), oldest first as the
    local command prints it."""
    table = client.table(name)
    rows = list(client.pages(f"/tables/{table['id']}/instants"))
    return [instant_json(r) | {"archived": r["archived"]} for r in reversed(rows)]


def savepoints(client: ConsoleClient, name: str) -> list[dict[str, Any]]:
    table = client.table(name)
    return [{"instant": {"requestedTime": s["instant"], "action": "savepoint", "state": "COMPLETED"},
             "savepointedBy": s["savepointed_by"], "savepointedAt": s["savepointed_at_ms"], "comments": s["comments"],
             "files": s["files"], "bytes": s["bytes"], "missingFiles": s["missing_files"],
             "holdsBackArchival": s["holds_back_archival"]}
            for s in client.get(f"/tables/{table['id']}/savepoints")]


def instant_show(client: ConsoleClient, name: str, instant: str, action: str | None,
                 state: str | None) -> dict[str, Any]:
    table = client.table(name)
    rows = [r for r in client.pages(f"/tables/{table['id']}/instants", search=instant)
            if r["requested_time"] == instant and (action is None or r["action"] == action)]
    if not rows:
        raise RemoteError(f"{table['path']}: no instant {instant} in the console's timeline of {table['name']}")
    detail = client.get(f"/tables/{table['id']}/instants/{rows[0]['id']}")
    contents = [c for c in detail["contents"] if state is None or c["state"] == state.upper()]
    if not contents:
        raise RemoteError(f"{table['path']}: instant {instant} has no {state} state file")
    return {"instant": instant_json(detail), "content": contents[0]["content"]}


__all__ = ["ConsoleClient", "RemoteError", "instant_show", "savepoints", "table_info", "tables", "timeline"]
