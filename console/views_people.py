"""People and their API tokens: the People page (users, roles, the admin role's second
confirmation, identity links, deactivation) and each user's API tokens. Thin views over `console.services`,
as in `console/views.py`."""

from __future__ import annotations

from collections.abc import Callable

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from console import permissions, selectors, services
from console.models import IdentityLink, RoleGrant
from console.permissions import AuthenticatedHttpRequest
from console.roles import role_of
from console.views import attempt, refused


def _tokens_page(request: AuthenticatedHttpRequest, *, status: int = 200, **extra: object) -> HttpResponse:
    from console.models import ApiToken

    is_admin = request.user.has_perm(permissions.SETTINGS)
    rows = ApiToken.objects.select_related("user")
    return render(request, "console/tokens.html", {
        "tokens": rows if is_admin else rows.filter(user=request.user), "is_admin": is_admin, **extra},
        status=status)


@login_required
@require_GET
def tokens(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The user's API tokens (an admin's: everyone's)."""
    permissions.require_view(request.user)
    return _tokens_page(request)


@login_required
@require_POST
def token_create(request: AuthenticatedHttpRequest) -> HttpResponse:
    """A new token for the user; its secret is shown once."""
    permissions.require_view(request.user)
    try:
        token, secret = services.token_create(actor=request.user, owner=request.user,
                                              name=request.POST.get("name", ""))
    except ValidationError as exc:
        refused(request, exc)
        return _tokens_page(request, name=request.POST.get("name", ""), status=400)
    return _tokens_page(request, secret=secret, created=token)


@login_required
@require_POST
def token_revoke(request: AuthenticatedHttpRequest, token_id: int) -> HttpResponse:
    from console.models import ApiToken

    permissions.require_view(request.user)
    token = get_object_or_404(ApiToken.objects.select_related("user"), pk=token_id)
    services.token_revoke(actor=request.user, token=token)
    messages.success(request, f"Token {token.name} revoked.")
    return redirect("console:tokens")


def _people_page(request: AuthenticatedHttpRequest, *, status: int = 200, form: forms.Form | None = None,
                 **extra: object) -> HttpResponse:
    from console.forms import ROLE_CHOICES, PersonCreateForm

    return render(request, "console/people.html", {
        "page": selectors.page_of(selectors.people_rows(), request.GET.get("page")),
        "pending": selectors.pending_grants(), "form": form or PersonCreateForm(), "roles": ROLE_CHOICES,
        "links": selectors.identity_links(), "shared_emails": selectors.shared_emails(),
        "must_differ": settings.CLEANLINE_APPROVER_MUST_DIFFER, **extra}, status=status)


def _back_to_people(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The People page again (the page of the list the form was on), or the catalog for an
    admin who just gave up managing people."""
    if not permissions.may(User.objects.get(pk=request.user.pk), "manage_people"):  # not the cached permissions
        return redirect("console:catalog")
    page = request.POST.get("page", "")
    response = redirect("console:people")
    if page.isdigit():
        response["Location"] += f"?page={page}"
    return response


def _person(user_id: int) -> User:
    return get_object_or_404(User, pk=user_id)


@login_required
@require_GET
def people(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The console's users with their roles (admins: add users, change roles, deactivate)."""
    permissions.require(request.user, permissions.PEOPLE)
    return _people_page(request)


@login_required
@require_POST
def people_create(request: AuthenticatedHttpRequest) -> HttpResponse:
    """A new user with a role; a generated password is shown once. Refused: the form again,
    with the input and the reason."""
    from console.forms import PersonCreateForm

    permissions.require(request.user, permissions.PEOPLE)
    form = PersonCreateForm(request.POST)
    form.is_valid()  # the fields only carry the input; the service validates it
    try:
        person, password, generated = services.person_create(actor=request.user, **form.cleaned_data)
    except ValidationError as exc:
        refused(request, exc)
        return _people_page(request, form=form, status=400)
    waits = " The admin role waits for a second admin's confirmation." if selectors.pending_grants().filter(
        user=person).exists() else ""
    messages.success(request, f"{person.username} can log in now, as {role_of(person)}.{waits}")
    return _people_page(request, created=person, password=password if generated else "")


def _change_person(request: AuthenticatedHttpRequest, user_id: int, change: Callable[[User], str]) -> HttpResponse:
    """A People action on one user (admins only): `change` runs the service and says what it
    did, or the refusal is shown; back to the People page either way."""
    permissions.require(request.user, permissions.PEOPLE)
    person = _person(user_id)
    attempt(request, lambda: change(person))
    return _back_to_people(request)


@login_required
@require_POST
def people_role(request: AuthenticatedHttpRequest, user_id: int) -> HttpResponse:
    role = request.POST.get("role", "")

    def change(person: User) -> str:
        if not services.person_role_change(actor=request.user, user=person, role=role):
            return (f"{person.username} stays {role_of(person)} until another admin confirms the admin role "
                    "(two-person approval).")
        return f"{person.username} is now {role_of(person)}."

    return _change_person(request, user_id, change)


def _change_grant(request: AuthenticatedHttpRequest, grant_id: int, change: Callable[[RoleGrant], str]) -> HttpResponse:
    """Confirm or decline a pending admin grant (admins only); back to the People page."""
    permissions.require(request.user, permissions.PEOPLE)
    grant = get_object_or_404(selectors.pending_grants(), pk=grant_id)
    attempt(request, lambda: change(grant))
    return _back_to_people(request)


@login_required
@require_POST
def people_grant_confirm(request: AuthenticatedHttpRequest, grant_id: int) -> HttpResponse:
    def confirm(grant: RoleGrant) -> str:
        services.person_admin_confirm(actor=request.user, grant=grant)
        return f"{grant.user.username} is now an admin."

    return _change_grant(request, grant_id, confirm)


@login_required
@require_POST
def people_grant_decline(request: AuthenticatedHttpRequest, grant_id: int) -> HttpResponse:
    def decline(grant: RoleGrant) -> str:
        services.person_admin_decline(actor=request.user, grant=grant)
        return f"The admin role for {grant.user.username} was declined; their role is unchanged."

    return _change_grant(request, grant_id, decline)


@login_required
@require_POST
def people_email(request: AuthenticatedHttpRequest, user_id: int) -> HttpResponse:
    """Set a local account's e-mail address (alerts and approval requests go to it)."""
    email = request.POST.get("email", "")

    def change(person: User) -> str:
        now = services.person_email_change(actor=request.user, user=person, email=email)
        return (f"{person.username}'s e-mail address is now {now}." if now
                else f"{person.username} has no e-mail address now.")

    return _change_person(request, user_id, change)


@login_required
@require_POST
def people_deactivate(request: AuthenticatedHttpRequest, user_id: int) -> HttpResponse:
    def deactivate(person: User) -> str:
        services.person_deactivate(actor=request.user, user=person)
        return f"{person.username} is deactivated: they can no longer log in or use their API tokens."

    return _change_person(request, user_id, deactivate)


@login_required
@require_POST
def people_reactivate(request: AuthenticatedHttpRequest, user_id: int) -> HttpResponse:
    def reactivate(person: User) -> str:
        services.person_reactivate(actor=request.user, user=person)
        return f"{person.username} can log in again, as {role_of(person)}."

    return _change_person(request, user_id, reactivate)


@login_required
@require_POST
def people_link(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Link two accounts (by username) as one person's, for the two-person rule."""
    permissions.require(request.user, permissions.PEOPLE)

    def link() -> str:
        made = services.person_link(actor=request.user, username=request.POST.get("username", ""),
                                    other_username=request.POST.get("other", ""))
        return (f"{made.user.username} and {made.other.username} are now one person for the two-person rule: "
                "neither approves a change of the other.")

    attempt(request, link)
    return _back_to_people(request)


@login_required
@require_POST
def people_unlink(request: AuthenticatedHttpRequest, link_id: int) -> HttpResponse:
    permissions.require(request.user, permissions.PEOPLE)
    link = get_object_or_404(IdentityLink.objects.select_related("user", "other", "linked_by"), pk=link_id)

    def unlink() -> str:
        services.person_unlink(actor=request.user, link=link)
        return f"{link.user.username} and {link.other.username} are no longer linked as one person."

    attempt(request, unlink)
    return _back_to_people(request)
