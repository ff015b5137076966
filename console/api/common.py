"""What every endpoint shares: token authentication, roles, JSON problem details, paging."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.core.paginator import EmptyPage, Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from ninja.security import HttpBearer

from console import permissions
from console.selectors.paging import page_number
from console.services import tokens
from console.services.audit import acting_token, request_scope
from console.services.signin import SignInRefused
from console.signin import throttle

MAX_PAGE_SIZE = 500


class TokenAuth(HttpBearer):
    """`Authorization: Bearer <personal API token>`: the request acts as the token's user, whose
    role must hold `permission` (403 otherwise). Authentication runs before Django Ninja reads
    the request's input, so that a role that may not call an endpoint learns that (403), not
    what its input lacks (400). A token refused for its user (local sign-in off) answers 401 with
    the reason. Refused tokens are counted per client address like failed sign-ins
    (`console.signin.throttle`): past `CLEANLINE_LOGIN_FAILURE_LIMIT` the address is answered 429
    without its token being looked up, for `CLEANLINE_LOGIN_COOLOFF_MINUTES`."""

    def __init__(self, permission: str = permissions.VIEW) -> None:
        super().__init__()
        self.permission = permission

    def authenticate(self, request: HttpRequest, token: str) -> User | None:
        if throttle.locked(request, throttle.API_TOKEN):
            return None  # answered 429 (django-axes), the token not even looked up
        try:
            found = tokens.token_user(token)
        except SignInRefused as refused:  # audited; the 401 says why
            request.cleanline_token_refusal = str(refused)  # type: ignore[attr-defined]  # read back by the 401 handler
            throttle.failed(request, throttle.API_TOKEN, method="api_token")
            return None
        if found is None:
            throttle.failed(request, throttle.API_TOKEN, method="api_token")
            return None
        user, record = found
        request.user = user
        acting_token(record.name)
        require(request, self.permission)
        return user


def role(permission: str) -> TokenAuth:
    """The authentication of an endpoint that needs `permission` (checked before its input)."""
    return TokenAuth(permission)


class AuditScopeMiddleware:
    """Forgets the acting API token when a request ends (see `console.services.audit`)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with request_scope():
            return self.get_response(request)


class ApiProblemMiddleware:
    """Every error under /api/ answered as problem details: Ninja's bare 405 (and any other
    error a page handler made, a 500 included) becomes `application/problem+json` with its
    status, so a script never parses HTML."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (not request.path.startswith("/api/") or response.status_code < 400
                or response.get("Content-Type", "").startswith(("application/problem+json", "application/json"))):
            return response
        if response.status_code == 429:  # django-axes' lockout (console.signin.throttle)
            seconds = int(settings.AXES_COOLOFF_TIME.total_seconds())
            answer = problem(429, "Too Many Requests", "Too many refused API tokens or sign-ins from this address: its "
                             f"requests are refused without being checked for up to {seconds // 60} minutes.")
            answer["Retry-After"] = str(seconds)
            return answer
        if response.status_code == 405:
            allowed = response.get("Allow", "")
            answer = problem(405, "Method Not Allowed", f"{request.method} is not allowed on {request.path}; it takes "
                                                        f"{allowed or 'other methods'}.")
            answer["Allow"] = allowed
            return answer
        return problem(response.status_code, response.reason_phrase, f"{request.method} {request.path} failed "
                       f"({response.status_code} {response.reason_phrase}).")


def user_of(request: HttpRequest) -> User:
    user = request.user
    if isinstance(user, AnonymousUser) or not user.is_authenticated:
        raise PermissionDenied("Not authenticated.")
    return user


def require(request: HttpRequest, permission: str = permissions.VIEW) -> User:
    """The request's user, if their role holds `permission` (every permission needs the right
    to view tables), else 403."""
    user = user_of(request)
    if not user.has_perm(permissions.VIEW) or not user.has_perm(permission):
        raise PermissionDenied("Your role does not allow this.")
    return user


def problem(status: int, title: str, detail: str, **extra: Any) -> HttpResponse:
    """An RFC 9457 problem details response."""
    import json

    body = {"type": "about:blank", "title": title, "status": status, "detail": detail, **extra}
    return HttpResponse(json.dumps(body), status=status, content_type="application/problem+json")


def paged(rows: QuerySet[Any] | Sequence[Any], page: int, page_size: int, item: Callable[[Any], Any]) -> dict[str, Any]:
    """One page of `rows` (1-based; a page past the end is a 404), with the totals."""
    page_size = max(1, min(page_size, MAX_PAGE_SIZE))
    page = page_number(page)  # 0 and negatives name no page: 404, as on the pages
    paginator = Paginator(rows, page_size)
    try:
        current = paginator.page(page)
    except EmptyPage:
        if page == 1:
            return {"count": 0, "page": 1, "pages": 1, "page_size": page_size, "items": []}
        from django.http import Http404

        raise Http404(f"Page {page} is past the last page ({paginator.num_pages}).") from None
    return {"count": paginator.count, "page": page, "pages": paginator.num_pages, "page_size": page_size,
            "items": [item(row) for row in current.object_list]}
