"""The sign-in settings read from the environment (console/settings.py calls these): role
mappings, the OIDC provider, the LDAP directory. Nothing here reaches a provider: OIDC's
endpoints are discovered at the first sign-in (`console.signin.oidc.discovery`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from console.roles import ROLES


def role_map(name: str, text: str) -> dict[str, str]:
    """A JSON object mapping claim values or group DNs to roles, checked: {"value": "admin"}."""
    if not text.strip():
        return {}
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}: not valid JSON ({exc})") from exc
    if not isinstance(parsed, dict):
        raise ImproperlyConfigured(f'{name}: expected a JSON object such as {{"cleanline-admins": "admin"}}')
    for key, role in parsed.items():
        if role not in ROLES:
            raise ImproperlyConfigured(f"{name}: {key!r} maps to {role!r}; a role is one of {', '.join(ROLES)}")
    return {str(key): str(role) for key, role in parsed.items()}


def role_for(values: object, mapping: Mapping[str, str], *, fold_case: bool = False) -> tuple[str, list[str]]:
    """The role that `values` (a claim's value: a string or a list of strings; or group DNs) are
    mapped to, the highest when several are (viewer < operator < admin), with the values that
    were mapped; ("", []) when none is."""
    if isinstance(values, str):
        items = [values]
    elif isinstance(values, (list, tuple, set, frozenset)):
        items = [v for v in values if isinstance(v, str)]
    else:
        items = []
    folded = {(k.lower() if fold_case else k): role for k, role in mapping.items()}
    matched = sorted({v for v in items if (v.lower() if fold_case else v) in folded})
    ranks = list(ROLES)
    roles = [folded[v.lower() if fold_case else v] for v in matched]
    return (max(roles, key=ranks.index), matched) if roles else ("", [])


def ldap_group_type(name: str) -> Any:
    """django-auth-ldap's group type for CLEANLINE_LDAP_GROUP_TYPE."""
    from django_auth_ldap.config import GroupOfNamesType, GroupOfUniqueNamesType, PosixGroupType

    types = {"groupOfNames": GroupOfNamesType, "groupOfUniqueNames": GroupOfUniqueNamesType,
             "posixGroup": PosixGroupType}
    if name not in types:
        raise ImproperlyConfigured(f"CLEANLINE_LDAP_GROUP_TYPE: {name!r}; expected one of {', '.join(types)}")
    return types[name]()


def ldap_settings(env: Mapping[str, str]) -> dict[str, Any]:
    """django-auth-ldap's AUTH_LDAP_* settings from the CLEANLINE_LDAP_* variables (the server's
    URI set: LDAP is on). The user is found by a search (bound as CLEANLINE_LDAP_BIND_DN, or
    anonymously), then their password checked by binding as them; their groups are searched
    under CLEANLINE_LDAP_GROUP_SEARCH_BASE."""
    try:
        import ldap
        from django_auth_ldap.config import LDAPSearch
    except ImportError as exc:
        raise ImproperlyConfigured(
            "CLEANLINE_LDAP_SERVER_URI is set but django-auth-ldap is not installed: "
            "pip install 'cleanline[console,ldap]' (python-ldap needs libldap2-dev and libsasl2-dev to build)"
        ) from exc

    def get(key: str, default: str = "") -> str:
        return env.get(key, default).strip()

    uri = get("CLEANLINE_LDAP_SERVER_URI")
    user_base, group_base = get("CLEANLINE_LDAP_USER_SEARCH_BASE"), get("CLEANLINE_LDAP_GROUP_SEARCH_BASE")
    if not uri.startswith(("ldap://", "ldaps://")):
        raise ImproperlyConfigured(f"CLEANLINE_LDAP_SERVER_URI: {uri!r} is not an ldap:// or ldaps:// URI")
    if not user_base or not group_base:
        raise ImproperlyConfigured("CLEANLINE_LDAP_SERVER_URI is set: CLEANLINE_LDAP_USER_SEARCH_BASE and "
                                   "CLEANLINE_LDAP_GROUP_SEARCH_BASE are needed too")
    start_tls = get("CLEANLINE_LDAP_START_TLS").lower() in ("1", "true", "yes")
    if start_tls and uri.startswith("ldaps://"):
        raise ImproperlyConfigured("CLEANLINE_LDAP_START_TLS is for ldap:// URIs; an ldaps:// URI is TLS already")
    require_cert = get("CLEANLINE_LDAP_TLS_REQUIRE_CERT", "demand").lower()
    levels = {"demand": ldap.OPT_X_TLS_DEMAND, "hard": ldap.OPT_X_TLS_HARD, "allow": ldap.OPT_X_TLS_ALLOW,
              "never": ldap.OPT_X_TLS_NEVER}
    if require_cert not in levels:
        raise ImproperlyConfigured(f"CLEANLINE_LDAP_TLS_REQUIRE_CERT: {require_cert!r}; expected demand or never")
    timeout = float(get("CLEANLINE_LDAP_TIMEOUT", "10"))
    options: dict[Any, Any] = {ldap.OPT_REFERRALS: 0, ldap.OPT_NETWORK_TIMEOUT: timeout, ldap.OPT_TIMEOUT: timeout,
                               ldap.OPT_X_TLS_REQUIRE_CERT: levels[require_cert]}
    if get("CLEANLINE_LDAP_CA_FILE"):
        options[ldap.OPT_X_TLS_CACERTFILE] = get("CLEANLINE_LDAP_CA_FILE")
    # Applies the TLS options above to this connection (python-ldap's documented last option).
    options[ldap.OPT_X_TLS_NEWCTX] = 0
    return {
        "AUTH_LDAP_SERVER_URI": uri,
        "AUTH_LDAP_START_TLS": start_tls,
        "AUTH_LDAP_CONNECTION_OPTIONS": options,
        "AUTH_LDAP_BIND_DN": get("CLEANLINE_LDAP_BIND_DN"),
        "AUTH_LDAP_BIND_PASSWORD": env.get("CLEANLINE_LDAP_BIND_PASSWORD", ""),
        "AUTH_LDAP_USER_SEARCH": LDAPSearch(user_base, ldap.SCOPE_SUBTREE,
                                            get("CLEANLINE_LDAP_USER_FILTER", "(uid=%(user)s)")),
        "AUTH_LDAP_GROUP_SEARCH": LDAPSearch(group_base, ldap.SCOPE_SUBTREE,
                                             get("CLEANLINE_LDAP_GROUP_FILTER", "(objectClass=*)")),
        "AUTH_LDAP_GROUP_TYPE": ldap_group_type(get("CLEANLINE_LDAP_GROUP_TYPE", "groupOfNames")),
        "AUTH_LDAP_USER_ATTR_MAP": {"first_name": get("CLEANLINE_LDAP_ATTR_FIRST_NAME", "givenName"),
                                    "last_name": get("CLEANLINE_LDAP_ATTR_LAST_NAME", "sn"),
                                    "email": get("CLEANLINE_LDAP_ATTR_EMAIL", "mail")},
        "AUTH_LDAP_ALWAYS_UPDATE_USER": True,
        "AUTH_LDAP_CACHE_TIMEOUT": 0,  # group membership read afresh at every sign-in
    }
