"""Signing in: local accounts, OIDC (mozilla-django-oidc) and LDAP (django-auth-ldap).

Every way in ends in one Django user with one role group. A user signing in through OIDC or LDAP
is created at the first sign-in (`console.models.Profile` says where they come from), and their
role is read again from the identity provider at every sign-in: from a claim
(`CLEANLINE_OIDC_ROLE_CLAIM`, mapped by `CLEANLINE_OIDC_CLAIM_ROLES`) or from group membership
(`CLEANLINE_LDAP_GROUP_ROLES`). No mapped role: no access (the role groups are taken away and the
sign-in refused). Local accounts stay for break-glass admins: `CLEANLINE_LOCAL_SIGNIN=false`
turns local passwords off for everyone but `CLEANLINE_BREAK_GLASS_USERS`. Every refusal is in the
audit log (`signin.refused`, with the method and the reason); the writes are in
`console.services.signin`.

Modules: `config` (the settings' parsers, no Django import), `oidc` (the backend, the views of the
code flow, discovery and sign-out at the provider), `ldap` (the backend), `local` (the local
backend), `throttle` (refused sign-ins, OIDC callbacks and API tokens counted per address, on
django-axes), `views` (the login and logout pages)."""
