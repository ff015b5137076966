"""The People page (admins add users, give roles, deactivate and reactivate them; the last active
admin stays), the role badge, and buttons shown only to those who may use them (the plan's
requester is not offered Approve under two-person approval)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from playwright.sync_api import Browser, Page

from console import services
from console.models import AuditEvent, CleanPlan, Table
from console.models_approvals import ApprovalStatus
from tests.console.helpers import SHORT_RETENTION, SHOTS
from tests.helpers import fake_failed_write

pytestmark = pytest.mark.django_db
STRONG = "a long enough password 1"
TABLE = "sample_table/cow/v9_txns_simple_nometa"
LATEST_COMMIT = "20260307135709890"  # the last completed commit of TABLE


def person(name: str, role: str = "", *, superuser: bool = False, active: bool = True) -> User:
    user = User.objects.create_user(name, is_superuser=superuser, is_active=active)
    if role:
        user.groups.add(Group.objects.get(name=role))
    return user


def client_of(user: User | None) -> Client:
    """A client enforcing CSRF like a browser, logged in as `user` (None: anonymous)."""
    client = Client(enforce_csrf_checks=True)
    if user is not None:
        client.force_login(user)
    return client


def csrf(client: Client) -> str:
    assert client.get(reverse("login")).status_code == 200
    return str(client.cookies["csrftoken"].value)


def post(client: Client, name: str, data: dict[str, str] | None = None, *args: int) -> object:
    return client.post(reverse(f"console:{name}", args=args), {**(data or {}), "csrfmiddlewaretoken": csrf(client)})


def events(action: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action=action).order_by("pk"))


def mutations(target: User) -> dict[str, tuple[str, tuple[int, ...], dict[str, str]]]:
    """Each People mutation: its URL name, arguments and a request that changes something."""
    return {"create": ("people_create", (), {"username": "newcomer", "role": "viewer", "password": STRONG}),
            "role": ("people_role", (target.pk,), {"role": "admin"}),
            "deactivate": ("people_deactivate", (target.pk,), {}),
            "reactivate": ("people_reactivate", (target.pk,), {}),
            "email": ("people_email", (target.pk,), {"email": "target@example.com"})}


def snapshot() -> list[tuple[str, bool, tuple[str, ...]]]:
    return [(u.username, u.is_active, tuple(sorted(g.name for g in u.groups.all())))
            for u in User.objects.order_by("username")]


# Who may use the page: GET on a mutation is 405, viewers and operators 403, no role 404,
# anonymous users are sent to log in, CSRF is enforced.

def test_people_get_on_a_mutation_is_405() -> None:
    admin = client_of(person("boss", "admin"))
    target = person("target", "operator")
    assert admin.get(reverse("console:people")).status_code == 200
    for name, args, _ in mutations(target).values():
        assert admin.get(reverse(f"console:{name}", args=args)).status_code == 405, name


@pytest.mark.parametrize("role", ["viewer", "operator", "", "anonymous"])
def test_people_page_and_mutations_refused_without_the_permission(role: str) -> None:
    person("boss", "admin")
    target = person("target", "operator", active=False)
    client = client_of(None if role == "anonymous" else person("someone", role))
    before = snapshot()
    answers = [client.get(reverse("console:people"))]
    answers += [post(client, name, data, *args) for name, args, data in mutations(target).values()]
    for response in answers:
        if role == "anonymous":
            assert response.status_code == 302 and response.url.startswith(reverse("login"))  # type: ignore[attr-defined]
        else:
            assert response.status_code == (404 if role == "" else 403)  # type: ignore[attr-defined]
    assert snapshot() == before and not AuditEvent.objects.filter(action__startswith="people.").exists()


def test_people_mutations_without_csrf_token_are_refused() -> None:
    admin = client_of(person("boss", "admin"))
    target = person("target", "operator", active=False)
    csrf(admin)  # the cookie is there; the forms do not carry the token
    before = snapshot()
    for name, args, data in mutations(target).values():
        response = admin.post(reverse(f"console:{name}", args=args), data)
        assert response.status_code == 403 and b"CSRF" in response.content, name
    assert snapshot() == before and not AuditEvent.objects.filter(action__startswith="people.").exists()


def test_people_nav_link_only_for_those_who_manage_people() -> None:
    link = f'href="{reverse("console:people")}"'.encode()
    assert link in client_of(person("boss", "admin")).get(reverse("console:catalog")).content
    assert link in client_of(person("root", superuser=True)).get(reverse("console:catalog")).content
    for role in ("viewer", "operator"):
        assert link not in client_of(person(f"a-{role}", role)).get(reverse("console:catalog")).content


# What an admin does there.

def test_people_admin_creates_a_user_with_a_generated_password_shown_once() -> None:
    boss = person("boss", "admin")
    admin = client_of(boss)
    response = post(admin, "people_create", {"username": "olga", "first_name": "Olga", "last_name": "Ops",
                                             "email": "olga@example.com", "role": "operator", "password": ""})
    assert response.status_code == 200  # type: ignore[attr-defined]
    html = response.content.decode()  # type: ignore[attr-defined]
    password = html.split('<code id="new-password">')[1].split("</code>")[0]
    olga = User.objects.get(username="olga")
    assert olga.is_active and olga.check_password(password) and olga.get_full_name() == "Olga Ops"
    assert [g.name for g in olga.groups.all()] == ["operator"] and olga.email == "olga@example.com"
    assert password not in admin.get(reverse("console:people")).content.decode()  # shown once
    [created] = events("people.created")
    assert created.user == boss and created.parameters == {"username": "olga", "role": "operator",
                                                           "password": "generated"}
    assert password not in str(created.parameters)
    login = Client().post(reverse("login"), {"username": "olga", "password": password})
    assert login.status_code == 302 and login["Location"] == reverse("console:home")


def test_people_admin_creates_a_user_with_a_given_password_and_no_role() -> None:
    admin = client_of(person("boss", "admin"))
    response = post(admin, "people_create", {"username": "nora", "role": "", "password": STRONG})
    assert response.status_code == 200 and b'id="new-password"' not in response.content  # type: ignore[attr-defined]
    nora = User.objects.get(username="nora")
    assert nora.check_password(STRONG) and not nora.groups.exists()
    assert events("people.created")[0].parameters["password"] == "given"


@pytest.mark.parametrize(("data", "reason"), [
    ({"username": "weak", "password": "short"}, "too short"),
    ({"username": "boss", "password": STRONG}, "already a user named"),
    ({"username": "BOSS", "password": ""}, "already a user named"),
    ({"username": "bad name!", "password": STRONG}, "valid username"),
    ({"username": "mail", "email": "not-an-address", "password": STRONG}, "valid email"),
    ({"username": "rolo", "role": "owner", "password": STRONG}, "Unknown role"),
])
def test_people_create_refused_keeps_the_input_and_is_audited(data: dict[str, str], reason: str) -> None:
    boss = person("boss", "admin")
    admin = client_of(boss)
    form = {"first_name": "Kept", "last_name": "Name", "email": "kept@example.com", "role": "admin", **data}
    before = snapshot()
    response = post(admin, "people_create", form)
    html = response.content.decode()  # type: ignore[attr-defined]
    assert response.status_code == 400 and reason in html  # type: ignore[attr-defined]
    assert snapshot() == before
    assert f'value="{data["username"]}"' in html.replace("&#x27;", "'") and 'value="Kept"' in html
    assert 'value="Name"' in html and f'value="{form["email"]}"' in html
    if form["role"] == "admin":
        assert '<option value="admin" selected>' in html
    assert 'name="password"' in html and STRONG not in html  # a password is never sent back
    [refused] = events("people.refused")
    assert refused.user == boss and refused.parameters["change"] == "create"
    assert refused.parameters["username"] == data["username"] and reason in refused.parameters["reason"]


def test_people_role_change_is_audited_and_replaces_only_role_groups() -> None:
    boss = person("boss", "admin")
    admin = client_of(boss)
    olga = person("olga", "viewer")
    other = Group.objects.create(name="on-call")
    olga.groups.add(other)
    response = post(admin, "people_role", {"role": "operator", "page": "1"}, olga.pk)
    assert response.status_code == 302 and response.url == reverse("console:people") + "?page=1"  # type: ignore[attr-defined]
    assert sorted(g.name for g in olga.groups.all()) == ["on-call", "operator"]
    post(admin, "people_role", {"role": ""}, olga.pk)
    assert [g.name for g in olga.groups.all()] == ["on-call"]
    assert [e.parameters for e in events("people.role_changed")] == [
        {"username": "olga", "from": "viewer", "to": "operator"}, {"username": "olga", "from": "operator", "to": ""}]
    assert all(e.user == boss for e in events("people.role_changed"))
    page = admin.get(reverse("console:people")).content.decode()
    assert "olga is now no role" in page


def test_people_deactivate_and_reactivate_are_audited_and_stop_logins() -> None:
    admin = client_of(person("boss", "admin"))
    olga = User.objects.create_user("olga", password=STRONG)
    olga.groups.add(Group.objects.get(name="operator"))
    session = Client()
    assert session.post(reverse("login"), {"username": "olga", "password": STRONG}).status_code == 302
    assert session.get(reverse("console:catalog")).status_code == 200
    assert post(admin, "people_deactivate", {}, olga.pk).status_code == 302  # type: ignore[attr-defined]
    olga.refresh_from_db()
    assert not olga.is_active
    assert session.get(reverse("console:catalog")).status_code == 302  # the open session is over
    assert Client().post(reverse("login"), {"username": "olga", "password": STRONG}).status_code == 200  # refused
    page = admin.get(reverse("console:people")).content.decode()
    assert "deactivated" in page and reverse("console:people_reactivate", args=[olga.pk]) in page
    post(admin, "people_deactivate", {}, olga.pk)  # already inactive: nothing more happens
    assert post(admin, "people_reactivate", {}, olga.pk).status_code == 302  # type: ignore[attr-defined]
    olga.refresh_from_db()
    assert olga.is_active and [g.name for g in olga.groups.all()] == ["operator"]
    assert Client().post(reverse("login"), {"username": "olga", "password": STRONG}).status_code == 302
    assert [e.action for e in AuditEvent.objects.filter(action__startswith="people.").order_by("pk")] == [
        "people.deactivated", "people.reactivated"]


def test_people_an_admin_sets_an_accounts_email_and_the_two_person_rule_decides_a_change(settings) -> None:
    """Issue 43: the demo's admins had no e-mail address and the page could not add one."""
    settings.CLEANLINE_APPROVER_MUST_DIFFER = True
    boss, olga = person("boss", "admin"), person("olga", "admin")
    admin = client_of(boss)
    page = admin.get(reverse("console:people")).content.decode()
    assert f'action="{reverse("console:people_email", args=[olga.pk])}"' in page
    assert 'aria-label="e-mail address of olga"' in page
    response = post(admin, "people_email", {"email": "olga@example.com", "page": "1"}, olga.pk)
    assert response.status_code == 302  # type: ignore[attr-defined]
    olga.refresh_from_db()
    assert olga.email == "olga@example.com"
    assert [e.parameters for e in events("people.email_changed")] == [
        {"username": "olga", "from": "", "to": "olga@example.com"}]
    assert 'value="olga@example.com"' in admin.get(reverse("console:people")).content.decode()
    post(admin, "people_email", {"email": "not an address"}, olga.pk)
    olga.refresh_from_db()
    assert olga.email == "olga@example.com" and events("people.refused")[-1].parameters["change"] == "e-mail"
    # Changing an address that is set may part two accounts of one person: nobody changes their own.
    own = client_of(olga)
    post(own, "people_email", {"email": "elsewhere@example.com"}, olga.pk)
    olga.refresh_from_db()
    assert olga.email == "olga@example.com"
    post(admin, "people_email", {"email": ""}, olga.pk)  # another admin may clear it
    olga.refresh_from_db()
    assert olga.email == ""


def test_people_unknown_user_is_404() -> None:
    admin = client_of(person("boss", "admin"))
    assert post(admin, "people_role", {"role": "viewer"}, 999999).status_code == 404  # type: ignore[attr-defined]
    assert post(admin, "people_deactivate", {}, 999999).status_code == 404  # type: ignore[attr-defined]


# One active admin always remains.

@pytest.mark.parametrize(("name", "data"), [("people_role", {"role": "operator"}), ("people_role", {"role": ""}),
                                            ("people_deactivate", {})])
def test_people_last_admin_cannot_demote_or_deactivate_themselves(name: str, data: dict[str, str]) -> None:
    boss = person("boss", "admin")
    person("former", "admin", active=False)  # a deactivated admin does not count
    admin = client_of(boss)
    before = snapshot()
    response = post(admin, name, data, boss.pk)
    assert response.status_code == 302  # type: ignore[attr-defined]
    page = admin.get(reverse("console:people")).content.decode()
    assert "boss is the last active admin" in page
    assert snapshot() == before
    [refused] = events("people.refused")
    assert refused.user == boss and refused.parameters["username"] == "boss"
    assert "last active admin" in refused.parameters["reason"]
    assert not AuditEvent.objects.filter(action__in=["people.role_changed", "people.deactivated"]).exists()


def test_people_an_admin_steps_down_when_another_admin_remains() -> None:
    boss = person("boss", "admin")
    second = person("second", "admin")
    admin = client_of(boss)
    response = post(admin, "people_role", {"role": "operator"}, boss.pk)
    assert response.status_code == 302 and response.url == reverse("console:catalog")  # type: ignore[attr-defined]
    assert [g.name for g in boss.groups.all()] == ["operator"]
    assert admin.get(reverse("console:people")).status_code == 403
    post(client_of(second), "people_deactivate", {}, second.pk)  # now the last one
    second.refresh_from_db()
    assert second.is_active and "second is the last active admin" in events("people.refused")[0].parameters["reason"]


def test_people_a_superuser_counts_as_an_admin_and_only_a_superuser_changes_one() -> None:
    boss = person("boss", "admin")
    root = person("root", superuser=True)
    admin = client_of(boss)
    before = snapshot()
    post(admin, "people_deactivate", {}, root.pk)
    post(admin, "people_role", {"role": "viewer"}, root.pk)
    assert snapshot() == before
    assert [e.parameters["reason"] for e in events("people.refused")] == [
        "root is a superuser: only a superuser changes a superuser."] * 2
    assert "only a superuser changes a superuser" in admin.get(reverse("console:people")).content.decode()
    post(admin, "people_deactivate", {}, boss.pk)  # the superuser remains: allowed
    boss.refresh_from_db()
    assert not boss.is_active and events("people.deactivated")[0].parameters == {"username": "boss"}


def test_people_list_is_paged() -> None:
    admin = client_of(person("boss", "admin"))
    User.objects.bulk_create([User(username=f"user{n:03}") for n in range(60)])
    first = admin.get(reverse("console:people")).content.decode()
    assert "61 users, page 1 of 2" in first and "user048" in first and "user049" not in first
    second = admin.get(reverse("console:people"), {"page": "2"}).content.decode()
    assert "user049" in second and "user059" in second and "user000" not in second
    assert admin.get(reverse("console:people"), {"page": "3"}).status_code == 404
    assert "never" in second  # last login


# The role badge.

def test_people_badge_names_the_role_and_a_superuser() -> None:
    assert b"(<span class=\"role\">superuser (all permissions)</span>)" in client_of(
        person("root", superuser=True)).get(reverse("console:catalog")).content
    assert b"(<span class=\"role\">operator</span>)" in client_of(
        person("olga", "operator")).get(reverse("console:catalog")).content
    page = client_of(person("boss", "admin")).get(reverse("console:people")).content.decode()
    row = page.split('data-username="root"')[1].split("</tr>")[0]
    assert '<span class="badge role">superuser (all permissions)</span>' in row


# Buttons shown only to those who may use them.

def draft_plan(table: Table, requester: User | None) -> CleanPlan:
    plan = services.plan_build(plan=services.plan_request(table=table, user=requester, overrides=SHORT_RETENTION))
    assert plan.status == ApprovalStatus.DRAFT and plan.files_to_delete > 0
    return plan


APPROVE = b"Approve and run"
NOTE = b"another admin must approve"


def test_people_requester_does_not_see_approve_another_admin_does(table: Table, settings) -> None:
    settings.CLEANLINE_APPROVER_MUST_DIFFER = True
    requester, other = person("boss", "admin"), person("second", "admin")
    plan = draft_plan(table, requester)
    url = reverse("console:plan", args=[table.pk, plan.pk])
    own = client_of(requester).get(url).content
    assert APPROVE not in own and NOTE in own and b"Reject" in own  # the requester may still withdraw it
    theirs = client_of(other).get(url).content
    assert APPROVE in theirs and NOTE not in theirs
    root = client_of(person("root", superuser=True)).get(url).content
    assert APPROVE in root
    for role in ("viewer", "operator"):
        page = client_of(person(f"a-{role}", role)).get(url).content
        assert APPROVE not in page and b"Reject" not in page and b"An admin approves" in page
    # the server still refuses the requester
    assert post(client_of(requester), "plan_approve", {}, table.pk, plan.pk).status_code == 302  # type: ignore[attr-defined]
    plan.refresh_from_db()
    assert plan.status == ApprovalStatus.DRAFT


def test_people_requester_sees_approve_when_approvers_need_not_differ(table: Table, settings) -> None:
    settings.CLEANLINE_APPROVER_MUST_DIFFER = False
    requester = person("boss", "admin")
    plan = draft_plan(table, requester)
    page = client_of(requester).get(reverse("console:plan", args=[table.pk, plan.pk])).content
    assert APPROVE in page and NOTE not in page


def test_people_automatic_plan_can_be_approved_by_any_admin(table: Table, settings) -> None:
    settings.CLEANLINE_APPROVER_MUST_DIFFER = True
    plan = draft_plan(table, None)
    page = client_of(person("boss", "admin")).get(reverse("console:plan", args=[table.pk, plan.pk])).content
    assert APPROVE in page and NOTE not in page


def forms_on(client: Client, table: Table, savepoint: str) -> dict[str, set[str]]:
    """Which mutation forms each page shows (their actions' URL names)."""
    pages = {"catalog": reverse("console:catalog"), "overview": reverse("console:overview", args=[table.pk]),
             "savepoints": reverse("console:savepoints", args=[table.pk]),
             "restore": reverse("console:restore", args=[table.pk, savepoint]),
             # the rollback form lives on the failed write's preview page
             "failed_writes": reverse("console:rollback_preview", args=[table.pk, "20990101000000000"])}
    actions = {"register": reverse("console:register"), "sync": reverse("console:sync", args=[table.pk]),
               "plan_request": reverse("console:plan_request", args=[table.pk]),
               "table_settings": reverse("console:table_settings", args=[table.pk]),
               "savepoint_create": reverse("console:savepoint_create", args=[table.pk]),
               "savepoint_delete": reverse("console:savepoint_delete", args=[table.pk, savepoint]),
               "restore_run": reverse("console:restore_run", args=[table.pk]),
               "rollback_run": reverse("console:rollback_run", args=[table.pk])}
    shown: dict[str, set[str]] = {}
    for page, url in pages.items():
        response = client.get(url)
        assert response.status_code == 200, page
        html = response.content.decode()
        shown[page] = {name for name, action in actions.items() if f'action="{action}' in html}
    return shown


def test_people_buttons_shown_only_to_roles_that_may_use_them(table: Table, settings) -> None:
    savepoint = services.savepoint_create(table=table, user=None, instant_time=LATEST_COMMIT, comment="")
    # a failed write, so that its rollback button has a place
    fake_failed_write(Path(table.path.removeprefix("file:")), "20990101000000000", markers=True)
    services.table_sync(table=table)
    admin = {"catalog": {"register"}, "overview": {"sync", "plan_request", "table_settings"},
             "savepoints": {"savepoint_create", "savepoint_delete"}, "restore": {"restore_run"},
             "failed_writes": {"rollback_run"}}
    assert forms_on(client_of(person("boss", "admin")), table, savepoint) == admin
    assert forms_on(client_of(person("root", superuser=True)), table, savepoint) == admin
    assert forms_on(client_of(person("olga", "operator")), table, savepoint) == {
        "catalog": set(), "overview": {"sync", "plan_request"}, "savepoints": {"savepoint_create"}, "restore": set(),
        "failed_writes": set()}
    assert forms_on(client_of(person("vera", "viewer")), table, savepoint) == {
        "catalog": set(), "overview": set(), "savepoints": set(), "restore": set(), "failed_writes": set()}


# The demo accounts.

def test_people_bootstrap_creates_two_admins_once(tmp_path: Path, capsys) -> None:
    call_command("bootstrap", str(tmp_path))
    out = capsys.readouterr().out.splitlines()
    logins = {line.split()[1]: line.split(" / ")[1] for line in out if line.startswith("login: ")}
    assert set(logins) == {"admin", "admin2"}
    assert "two-person approval: a plan admin makes is approved by admin2, and the other way round" in out
    for name, password in logins.items():
        user = User.objects.get(username=name)
        assert user.check_password(password) and [g.name for g in user.groups.all()] == ["admin"]
    call_command("bootstrap", str(tmp_path))  # again: nothing new, no password shown
    again = capsys.readouterr().out
    assert User.objects.count() == 2 and not any(password in again for password in logins.values())
    assert "login: admin2 (existing account" in again


# In a real browser (headless Chromium), at desktop and phone widths.

def log_in(browser: Browser, live_server, width: int, username: str, password: str) -> Page:  # noqa: F811
    page = browser.new_context(viewport={"width": width, "height": 900}).new_page()
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Lake dashboard')")  # the home page after login
    return page


@pytest.mark.parametrize("width", [1280, 390])
def test_people_browser_admin_creates_an_operator(browser: Browser, live_server, width: int) -> None:  # noqa: F811
    User.objects.create_user("ada", password=STRONG).groups.add(Group.objects.get(name="admin"))
    page = log_in(browser, live_server, width, "ada", STRONG)
    assert page.locator("header .role").inner_text() == "admin"
    page.click("header >> text=People")
    page.wait_for_selector("h1:has-text('People')")
    form = page.locator("form#person-create")
    box = form.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width  # the form fits the screen
    form.locator("input[name=username]").fill("otto")
    form.locator("input[name=first_name]").fill("Otto")
    form.locator("input[name=email]").fill("otto@example.com")
    form.locator("select[name=role]").select_option("operator")
    form.locator("button[type=submit]").click()
    page.wait_for_selector("#person-created")
    password = page.locator("#new-password").inner_text()
    row = page.locator('tr[data-username="otto"]')
    assert row.locator(".badge.role").inner_text() == "operator"
    assert row.locator("input[name=email]").input_value() == "otto@example.com"  # editable there (issue 43)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"people-{width}.png"), full_page=True)
    page.context.close()
    otto = User.objects.get(username="otto")
    assert [g.name for g in otto.groups.all()] == ["operator"] and otto.first_name == "Otto"
    assert AuditEvent.objects.filter(action="people.created", username="ada").count() == 1
    page = log_in(browser, live_server, width, "otto", password)  # the shown password works
    assert page.locator("header .role").inner_text() == "operator"
    assert page.locator("header >> text=People").count() == 0
    page.context.close()
