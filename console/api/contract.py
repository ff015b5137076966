"""The OpenAPI document held to what the API answers (issue 44's contract run, see
tests/console/api/test_api_contract.py): Ninja documents every response as `application/json`,
while every error is sent as `application/problem+json` (console.api.common.problem), and it lists
no 400 for an operation whose input can be refused. This puts both right in the document, once for
every operation, so the routers need not repeat it."""

from __future__ import annotations

from typing import Any

from ninja import NinjaAPI

PROBLEM = "application/problem+json"


def problem_responses(document: dict[str, Any]) -> dict[str, Any]:
    """Every error response (4xx, 5xx) of `document` documented as problem details, and a 400 on
    every operation that takes parameters or a body (a value that does not fit is refused with
    one), reusing the operation's own problem schema."""
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            problem_schema: Any = None
            for status, response in responses.items():
                if str(status)[0] in "45":
                    content = response.get("content", {})
                    media = content.pop("application/json", None) or content.get(PROBLEM)
                    if media is not None:
                        content[PROBLEM] = media
                        problem_schema = problem_schema or media
            takes_input = bool(operation.get("parameters")) or "requestBody" in operation
            if takes_input and "400" not in responses and 400 not in responses and problem_schema is not None:
                responses["400"] = {"description": "Bad Request", "content": {PROBLEM: problem_schema}}
    return document


class ContractApi(NinjaAPI):
    """NinjaAPI whose OpenAPI document says what its errors are (problem_responses)."""

    def get_openapi_schema(self, *, path_prefix: str | None = None, path_params: dict[str, Any] | None = None) -> Any:
        document = super().get_openapi_schema(path_prefix=path_prefix, path_params=path_params)
        problem_responses(document)
        return document
