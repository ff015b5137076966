"""The REST API under /api/v1/ (Django Ninja): its OpenAPI 3 document at /api/v1/openapi.json,
interactive docs at /api/v1/docs. Every call authenticates with a personal API token
(`Authorization: Bearer ...`) and acts as the token's user with that user's role, through the
same services as the pages; errors are JSON problem details (RFC 9457)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import BadRequest, PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from ninja.errors import AuthenticationError, HttpError
from ninja.errors import ValidationError as InputError

from console.api import approvals, archival, compactions, health, history, operations, plans, services, tables, versions
from console.api.common import TokenAuth, problem
from console.api.contract import ContractApi
from console.services import TableBusy
from console.services.refusals import api_words
from timeline import CleanlineError

api = ContractApi(title="Cleanline API", version="1", urls_namespace="api", auth=TokenAuth(),
               description=__doc__ or "")
api.add_router("", tables.router)
api.add_router("", plans.router)
api.add_router("", operations.router)
api.add_router("", health.router)
api.add_router("", archival.router)
api.add_router("", approvals.router)
api.add_router("", history.router)
api.add_router("", services.router)
api.add_router("", versions.router)
api.add_router("", compactions.router)


@api.exception_handler(AuthenticationError)
def unauthenticated(request: HttpRequest, exc: Exception) -> HttpResponse:
    refusal = getattr(request, "cleanline_token_refusal", "")
    response = problem(401, "Unauthorized", refusal or "Send a personal API token: Authorization: Bearer <token> "
                       "(create one on the console's API tokens page).")
    response["WWW-Authenticate"] = "Bearer"
    return response


@api.exception_handler(PermissionDenied)
def forbidden(request: HttpRequest, exc: Exception) -> HttpResponse:
    return problem(403, "Forbidden", str(exc) or "Your role does not allow this.")


@api.exception_handler(Http404)
def not_found(request: HttpRequest, exc: Exception) -> HttpResponse:
    return problem(404, "Not Found", str(exc) or "No such object.")


def _where(loc: Any) -> str:
    """Where a bad value was sent, `query.since` or `body.confirm` (Ninja repeats `body`)."""
    parts = [str(p) for p in loc]
    return ".".join(p for i, p in enumerate(parts) if i == 0 or p != parts[i - 1])


@api.exception_handler(BadRequest)
def bad_request(request: HttpRequest, exc: BadRequest) -> HttpResponse:
    """400 for a value the selectors refuse (`console.selectors.paging.partition_filter`)."""
    return problem(400, "Bad Request", str(exc) or "The request is not valid.")


@api.exception_handler(InputError)
def bad_input(request: HttpRequest, exc: InputError) -> HttpResponse:
    """400 for input Ninja refuses: a body that does not fit, a filter or sort outside its choices
    (`console/api/filters.py`), each named with where it was sent (`query.since: ...`)."""
    details = "; ".join(f"{_where(e.get('loc', ()))}: {str(e.get('msg', '')).removeprefix('Value error, ')}"
                        for e in exc.errors)
    errors = [{k: v for k, v in e.items() if k != "ctx"} for e in exc.errors]  # ctx holds the exception itself
    return problem(400, "Bad Request", details or "The request is not valid.", errors=errors)


@api.exception_handler(TableBusy)
def busy(request: HttpRequest, exc: TableBusy) -> HttpResponse:
    return problem(409, "Table busy", "; ".join(exc.messages))


# The library's words for the live-writer override, and the API's: the field to send.
LIBRARY_OVERRIDE = "(--writers-stopped, writers_stopped=True)"
API_OVERRIDE = ('(send "writers_stopped": true in the request body; a savepoint\'s DELETE takes '
                '?writers_stopped=true)')


def in_api_words(text: str) -> str:
    """A refusal as an API caller acts on it: the fields to send, not the boxes to tick or the
    CLI's options."""
    return text.replace(LIBRARY_OVERRIDE, API_OVERRIDE)


@api.exception_handler(ValidationError)
def refused(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    return problem(409, "Refused", in_api_words(api_words(exc)))


@api.exception_handler(CleanlineError)
def lake_error(request: HttpRequest, exc: Exception) -> HttpResponse:
    return problem(409, "Table unavailable or refused", in_api_words(str(exc)))


@api.exception_handler(HttpError)
def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    return problem(exc.status_code, "Error", str(exc))


__all__ = ["api"]
