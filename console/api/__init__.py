"""The REST API under /api/v1/ (Django Ninja): its OpenAPI 3 document at /api/v1/openapi.json,
interactive docs at /api/v1/docs. Every call authenticates with a personal API token
(`Authorization: Bearer ...`) and acts as the token's user with that user's role, through the
same services as the pages; errors are JSON problem details (RFC 9457)."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError
from ninja.errors import ValidationError as InputError

from console.api import archival, operations, plans, tables
from console.api.common import TokenAuth, problem
from console.services import TableBusy
from timeline import CleanlineError

api = NinjaAPI(title="Cleanline API", version="1", urls_namespace="api", auth=TokenAuth(),
               description=__doc__ or "")
api.add_router("", tables.router)
api.add_router("", plans.router)
api.add_router("", operations.router)
api.add_router("", archival.router)


@api.exception_handler(AuthenticationError)
def unauthenticated(request: HttpRequest, exc: Exception) -> HttpResponse:
    response = problem(401, "Unauthorized", "Send a personal API token: Authorization: Bearer <token> (create one "
                       "on the console's API tokens page).")
    response["WWW-Authenticate"] = "Bearer"
    return response


@api.exception_handler(PermissionDenied)
def forbidden(request: HttpRequest, exc: Exception) -> HttpResponse:
    return problem(403, "Forbidden", str(exc) or "Your role does not allow this.")


@api.exception_handler(Http404)
def not_found(request: HttpRequest, exc: Exception) -> HttpResponse:
    return problem(404, "Not Found", str(exc) or "No such object.")


@api.exception_handler(InputError)
def bad_input(request: HttpRequest, exc: InputError) -> HttpResponse:
    details = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}" for e in exc.errors)
    return problem(400, "Bad Request", details or "The request is not valid.", errors=exc.errors)


@api.exception_handler(TableBusy)
def busy(request: HttpRequest, exc: TableBusy) -> HttpResponse:
    return problem(409, "Table busy", "; ".join(exc.messages))


@api.exception_handler(ValidationError)
def refused(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    return problem(409, "Refused", "; ".join(exc.messages))


@api.exception_handler(CleanlineError)
def lake_error(request: HttpRequest, exc: Exception) -> HttpResponse:
    return problem(409, "Table unavailable or refused", str(exc))


@api.exception_handler(HttpError)
def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    return problem(exc.status_code, "Error", str(exc))


__all__ = ["api"]
