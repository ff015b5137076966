"""The login page (the local or LDAP form, and "Sign in with <provider>" for OIDC) and sign-out
(at the provider too, when the session came from OIDC and the provider offers it)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import logout
from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import resolve_url
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from console.signin import oidc
from console.views_errors import cookies_refused_over_http


class SignInView(LoginView):
    """Django's login view with the sign-in choices: the password form (local accounts, and LDAP
    users with their directory password) unless local sign-in is off and LDAP is not configured
    (then only `?local=1`, for break-glass accounts, shows it), and the OIDC button."""

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        request = self.request
        password_form = settings.CLEANLINE_LOCAL_SIGNIN or settings.CLEANLINE_LDAP_ENABLED
        context.update({
            "oidc_enabled": oidc.enabled(),
            "oidc_provider": settings.CLEANLINE_OIDC_PROVIDER_NAME,
            "oidc_start": oidc.start_url() + (f"?{urlencode({'next': context['next']})}" if context.get("next")
                                              else ""),
            "password_form": password_form or request.GET.get("local") == "1" or request.method == "POST",
            "break_glass_link": not password_form,
            "ldap_enabled": settings.CLEANLINE_LDAP_ENABLED,
            "not_https": cookies_refused_over_http(request),
            "refusal": getattr(request, "cleanline_signin_refusal", "")
            or request.session.pop("cleanline_signin_refusal", ""),
        })
        return context


@require_POST
def sign_out(request: HttpRequest) -> HttpResponse:
    """Log out; a session that came from OIDC goes on to the provider's end_session_endpoint."""
    id_token = request.session.get("oidc_id_token", "") if oidc.enabled() else ""
    logout(request)
    if id_token:
        return oidc.redirect_to_provider_logout(request, id_token)
    return HttpResponseRedirect(resolve_url(settings.LOGOUT_REDIRECT_URL))
