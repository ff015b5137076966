"""Errors never show the debug page unless DEBUG=1; pages past the end answer 404; the favicon."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client
from django.urls import path, reverse

from console.models import Table
from tests.console.helpers import login

ROOT = Path(__file__).resolve().parents[3]


def broken(request: object) -> None:
    raise RuntimeError("boom: SECRET_KEY and a traceback must not reach the browser")


urlpatterns = [path("broken", broken)]  # this module is the URLconf of the 500 test


@pytest.mark.parametrize("value, debug", [(None, False), ("0", False), ("false", False), ("1", True),
                                          ("yes", True)])
def test_debug_is_off_unless_asked(value: str | None, debug: bool) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "PYTEST_VERSION")}
    env |= {"SECRET_KEY": "x" * 50, "DJANGO_SETTINGS_MODULE": "console.settings"} | ({"DEBUG": value} if value else {})
    out = subprocess.run([sys.executable, "-c", "from django.conf import settings; print(settings.DEBUG)"],
                         env=env, cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    assert out == str(debug)


@pytest.mark.django_db
def test_a_500_shows_the_plain_error_page_not_the_debug_page(settings) -> None:
    settings.ROOT_URLCONF = __name__
    settings.DEBUG = False
    response = Client(raise_request_exception=False).get("/broken")
    body = response.content.decode()
    assert response.status_code == 500 and "Something went wrong" in body
    assert "Traceback" not in body and "boom" not in body and "SECRET_KEY" not in body
    settings.DEBUG = True  # asked for: the debug page, with the error
    debug = Client(raise_request_exception=False).get("/broken")
    assert debug.status_code == 500 and "boom" in debug.content.decode()


@pytest.mark.django_db
def test_pages_past_the_end_answer_404(console_table) -> None:
    table: Table = console_table("sample_table/cow/v6_nonpartitioned")
    viewer = login("viewer")
    url = reverse("console:timeline", args=[table.pk])
    assert viewer.get(url, {"page": 1}).status_code == 200
    assert viewer.get(url, {"page": 99}).status_code == 404
    assert viewer.get(url, {"page": "x"}).status_code == 404
    assert viewer.get(reverse("console:audit"), {"page": 500}).status_code == 404


@pytest.mark.django_db
def test_pages_that_name_no_page_answer_404_on_every_page(console_table) -> None:
    """Issue 38: a page that is not a whole number, 0, a negative one or one far past the end
    is a 404 on every page that takes `?page=` (the history's charts are one page)."""
    table: Table = console_table("sample_table/cow/v6_nonpartitioned")
    admin = login("admin")
    urls = [reverse("console:catalog"), reverse("console:timeline", args=[table.pk]), reverse("console:audit"),
            reverse("console:people"), reverse("console:history"), reverse("console:table_history", args=[table.pk])]
    for url in urls:
        assert admin.get(url, {"page": 1}).status_code == 200, url
        for page in ("-1", "0", "x", "1.5", "999999999999"):
            assert admin.get(url, {"page": page}).status_code == 404, (url, page)


@pytest.mark.django_db
def test_favicon(client) -> None:  # type: ignore[no-untyped-def]
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"].endswith("console/favicon.svg")
