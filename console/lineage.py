"""Who is whom, for the two-person rule (`console.permissions.approval_refusal`): which accounts
are one person's, and which accounts each account comes from.

**One person.** Accounts that share a verified e-mail address (compared ignoring case), or that an
admin who is neither of them linked on the People page (`IdentityLink`), are one person's; so are
the accounts linked to those, and so on. An e-mail address is verified when it comes from someone
other than its holder: a local account's was set by an admin (the People page, `manage.py`; nobody
edits their own), an LDAP account's is the directory's `mail` attribute, an OIDC account's counts
only when the provider's `email_verified` claim was true at its last sign-in (`Profile.email_verified`).

**Lineage.** An account comes from whoever created it or gave it a role (`RoleGrant.requested_by`,
whatever became of the grant: asking is enough; taking every role away gives nothing), and from
the accounts those come from, and so on: whoever chose an account's password, or controls the
account that did, may act as it. Confirming an admin role (`RoleGrant.decided_by`) makes no
lineage, and a role that an identity provider gave has nobody behind it. An account's origins are
its person's accounts, the accounts they come from, those accounts' persons, and so on up. An
approver and a requester whose origins meet may not approve each other's changes: one created or
gave a role to the other (directly or through accounts made in between), both come from one
person, or they are one person.

Accounts are few: the whole graph is read in three queries and walked breadth-first, once from
each side, so the walk is bounded by the number of accounts and grants."""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass
from enum import StrEnum

from django.contrib.auth.models import User

from console.models import IdentityLink, RoleGrant, UserSource


class Tie(StrEnum):
    """Why a walk goes from one account to another."""

    CREATED = "created"  # the other created this account or gave it a role
    EMAIL = "email"  # the same person's: a verified e-mail address in common
    LINK = "link"  # the same person's: an identity link


@dataclass(frozen=True, slots=True)
class Edge:
    """One step of a walk: to account `to`, because of `kind`, with the linking admin's name as
    `detail`."""

    to: int
    kind: Tie
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Reached:
    """How a walk reached an account: from `previous` by `edge` (None at the start), `steps` away."""

    previous: int | None
    edge: Edge | None
    steps: int


def verified_email(email: str, source: str | None, email_verified: bool | None) -> str:
    """The account's e-mail address, lower-cased, when it counts as verified (module docstring);
    "" otherwise."""
    if not email.strip():
        return ""
    if source == UserSource.OIDC and not email_verified:
        return ""
    return email.strip().lower()


class Lineage:
    """The accounts, who is whom, and who comes from whom, as the database says now."""

    def __init__(self, names: dict[int, str], edges: dict[int, list[Edge]]) -> None:
        self.names, self.edges = names, edges

    @classmethod
    def load(cls) -> Lineage:
        names: dict[int, str] = {}
        edges: dict[int, list[Edge]] = defaultdict(list)
        by_email: dict[str, list[int]] = defaultdict(list)
        for pk, username, email, source, email_verified in User.objects.values_list(
                "pk", "username", "email", "profile__source", "profile__email_verified"):
            names[pk] = username
            address = verified_email(email, source, email_verified)
            if address:
                by_email[address].append(pk)
        for holders in by_email.values():
            for pk in holders:
                edges[pk] += [Edge(other, Tie.EMAIL) for other in holders if other != pk]
        for pk, other, linker in IdentityLink.objects.values_list("user_id", "other_id", "linked_by__username"):
            edges[pk].append(Edge(other, Tie.LINK, linker or "?"))
            edges[other].append(Edge(pk, Tie.LINK, linker or "?"))
        for pk, creator in RoleGrant.objects.exclude(requested_by=None).exclude(role="").values_list(
                "user_id", "requested_by_id").distinct():
            if pk != creator:
                edges[pk].append(Edge(creator, Tie.CREATED))
        return cls(names, edges)

    def origins(self, start: int) -> dict[int, Reached]:
        """Every account `start` comes from (itself included), each with the shortest way there."""
        reached = {start: Reached(None, None, 0)}
        queue = deque([start])
        while queue:
            here = queue.popleft()
            for edge in self.edges.get(here, ()):
                if edge.to not in reached:
                    reached[edge.to] = Reached(here, edge, reached[here].steps + 1)
                    queue.append(edge.to)
        return reached

    def _walk(self, reached: dict[int, Reached], meeting: int) -> list[tuple[int, Edge]]:
        """The steps from the start of `reached` to `meeting`, in order."""
        steps: list[tuple[int, Edge]] = []
        here = meeting
        while (way := reached[here]).previous is not None:
            assert way.edge is not None
            steps.append((way.previous, way.edge))
            here = way.previous
        return steps[::-1]

    def _says(self, start: int, edge: Edge) -> str:
        a, b = self.names.get(start, "?"), self.names.get(edge.to, "?")
        if edge.kind == Tie.CREATED:
            return f"{b} created {a} or gave it a role"
        if edge.kind == Tie.EMAIL:
            return f"{a} and {b} share a verified e-mail address"  # not which: viewers read the audit log
        return f"{a} and {b} are linked as one person (by {edge.detail})"

    def refusal(self, *, approver: int, other: int, who: str = "the requester") -> str:
        """Why the account `approver` may not approve a change of the account `other` (`who`
        names its holder: the requester, or the user an admin role is for), or "": their origins
        meet. The reason names the shortest chain found, account by account."""
        mine, theirs = self.origins(approver), self.origins(other)
        met = [pk for pk in mine if pk in theirs]
        if not met:
            return ""
        # the shortest chain; of equally short ones, the one that meets nearest the other account
        meeting = min(met, key=lambda pk: (mine[pk].steps + theirs[pk].steps, theirs[pk].steps, pk))
        up, down = self._walk(mine, meeting), self._walk(theirs, meeting)
        mine_created = any(edge.kind == Tie.CREATED for _, edge in up)
        theirs_created = any(edge.kind == Tie.CREATED for _, edge in down)
        if not mine_created and not theirs_created:
            headline = f"{who[:1].upper()}{who[1:]}'s account is another account of yours"
        elif not mine_created:
            headline = f"You created {who}'s account or gave it a role"
        elif not theirs_created:
            headline = f"This account was created or given its role by {who}"
        else:
            headline = f"Your account and {who}'s come from the same person ({self.names.get(meeting, '?')})"
        chain = [self._says(start, edge) for start, edge in up + down[::-1]]
        return f"{headline} ({'; '.join(chain)}): another admin must approve (CLEANLINE_APPROVER_MUST_DIFFER)."
