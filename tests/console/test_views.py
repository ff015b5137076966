"""Every page for every persona: anonymous, outsider (no role), viewer, operator, admin."""

from __future__ import annotations


import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse

from console.models import Table

pytestmark = pytest.mark.django_db
ROLES = ("viewer", "operator", "admin")


@pytest.fixture
def table(console_table) -> Table:
    return console_table("sample_table/cow/v9_txns_simple_nometa")


def client_for(role: str | None) -> Client:
    client = Client(enforce_csrf_checks=True)
    if role == "anonymous":
        return client
    user = User.objects.create_user(f"user-{role}", password="pw")
    if role:
        user.groups.add(Group.objects.get(name=role))
    client.force_login(user)
    return client


def pages(table: Table) -> list[str]:
    instant = table.instants.filter(action="commit").first()
    assert instant is not None
    return [reverse("console:catalog"), reverse("console:overview", args=[table.pk]),
            reverse("console:timeline", args=[table.pk]), reverse("console:instant", args=[table.pk, instant.pk]),
            reverse("console:file_groups", args=[table.pk]), reverse("console:sync_status", args=[table.pk])]


@pytest.mark.parametrize("role", ROLES)
def test_views_every_page_renders_for_every_role(table: Table, role: str) -> None:
    client = client_for(role)
    for url in pages(table):
        response = client.get(url)
        assert response.status_code == 200, url
    timeline = client.get(reverse("console:timeline", args=[table.pk]), {"action": "replacecommit"})
    assert b"replacecommit" in timeline.content and b"No instant matches" not in timeline.content
    detail = client.get(pages(table)[3])
    assert b"Write stats" in detail.content and b"partitionToWriteStats" in detail.content


def test_views_anonymous_is_sent_to_login_and_outsider_gets_404(table: Table) -> None:
    anonymous, outsider = client_for("anonymous"), client_for(None)
    for url in pages(table):
        assert anonymous.get(url).status_code == 302
        assert outsider.get(url).status_code == 404


@pytest.mark.parametrize(("name", "args"), [("console:register", []), ("console:sync", ["pk"])])
def test_views_mutations_are_post_only_with_csrf_and_roles(table: Table, name: str, args: list[str]) -> None:
    url = reverse(name, args=[table.pk for _ in args])
    admin = client_for("admin")
    assert admin.get(url).status_code == 405
    assert admin.post(url, {"path": "/x"}).status_code == 403  # no CSRF token
    assert client_for("viewer").post(url, {"path": "/x"}).status_code in (403,)
    assert client_for(None).post(url, {"path": "/x"}).status_code in (403, 404)


def test_views_register_refusals_are_shown_and_success_redirects(table: Table, table_copy,
                                                                django_capture_on_commit_callbacks) -> None:
    admin = Client()
    user = User.objects.create_user("boss", password="pw")
    user.groups.add(Group.objects.get(name="admin"))
    admin.force_login(user)
    refused = admin.post(reverse("console:register"), {"path": "/etc"})
    assert refused.status_code == 400 and b"outside the allowed roots" in refused.content
    path = table_copy("sample_table/cow/v8_nonpartitioned")
    with django_capture_on_commit_callbacks(execute=True):
        done = admin.post(reverse("console:register"), {"path": str(path)})
    assert done.status_code == 302
    registered = Table.objects.get(name="v8_nonpartitioned")
    assert registered.instants.count() > 0  # synced by the eager task on commit


def test_views_operator_can_queue_a_sync_and_viewer_cannot(table: Table) -> None:
    operator = Client()
    user = User.objects.create_user("op", password="pw")
    user.groups.add(Group.objects.get(name="operator"))
    operator.force_login(user)
    assert operator.post(reverse("console:sync", args=[table.pk])).status_code == 302
    viewer = Client()
    other = User.objects.create_user("view", password="pw")
    other.groups.add(Group.objects.get(name="viewer"))
    viewer.force_login(other)
    assert viewer.post(reverse("console:sync", args=[table.pk])).status_code == 403


def test_views_timeline_action_filter_lists_each_action_once(table: Table) -> None:
    from console import selectors

    assert selectors.actions_of(table) == sorted(set(table.instants.values_list("action", flat=True)))
