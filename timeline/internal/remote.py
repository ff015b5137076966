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
        return f"{problem.get('title', '')}: {problem.get('detail', '')}".strip(": ")
    except (ValueError, AttributeError):
        return body.decode(errors="replace")[:200]


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


__all__ = ["ConsoleClient", "RemoteError", "instant_detail", "instants", "savepoints", "tables"]
