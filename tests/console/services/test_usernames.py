"""Usernames (console/services/usernames.py): the characters that show nothing or reorder the
text are named and refused in a new username, on the People page as at a provider's sign-in
(tests/console/signin/ for those), an existing name holding one is still looked like, and the
lockout counts every spelling of a name as one."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError

from console import services
from console.models import AuditEvent
from console.services.usernames import hidden_characters, lockout_key, shown
from tests.console.helpers import person


@pytest.mark.parametrize(("username", "named"), [
    ("admin2\u200b", ["U+200B ZERO WIDTH SPACE"]), ("car\u00adol", ["U+00AD SOFT HYPHEN"]),
    ("\u202eadmin2", ["U+202E RIGHT-TO-LEFT OVERRIDE"]), ("\u2066admin\u2069", ["U+2066 LEFT-TO-RIGHT ISOLATE",
                                                                               "U+2069 POP DIRECTIONAL ISOLATE"]),
    ("admin\u200e", ["U+200E LEFT-TO-RIGHT MARK"]), ("ad\u3164min", ["U+3164 HANGUL FILLER"]),
    ("bo\u034fb", ["U+034F COMBINING GRAPHEME JOINER"]), ("bob\ufe0f", ["U+FE0F VARIATION SELECTOR-16"]),
    ("a\u00a0b", ["U+00A0 NO-BREAK SPACE"]), ("bob\u2800", ["U+2800 BRAILLE PATTERN BLANK"]),
    ("bob\u2028", ["U+2028 LINE SEPARATOR"]), ("bob\x07", ["U+0007"]),
    ("bob\U000e0041", ["U+E0041 TAG LATIN CAPITAL LETTER A"]), ("bob\u200b\u200b", ["U+200B ZERO WIDTH SPACE"]),
    ("admin2", []), ("José.Núñez", []), ("Ελένη", []), ("李雷", []), ("a b", []), ("o'brien-smith@example.org", []),
])
def test_usernames_hidden_characters_are_named_once(username: str, named: list[str]) -> None:
    assert hidden_characters(username) == named


@pytest.mark.parametrize(("typed", "key"), [
    ("Bob", "bob"), ("ＢＯＢ", "bob"), ("  bob ", "bob"), ("b\u00adob", "bob"), ("bob\u200b", "bob"),
    ("\u202ebob", "bob"), ("Straße", "strasse"), ("jo\tnes  smith", "jo nes smith"), ("ΣΊΣΥΦΟΣ", "σίσυφοσ"),
])
def test_usernames_lockout_key_is_one_name_for_every_spelling(typed: str, key: str) -> None:
    assert lockout_key(typed) == key


def test_usernames_shown_escapes_only_the_hidden_characters() -> None:
    assert shown("José\u200b\u202e") == "José\\u200b\\u202e"


@pytest.mark.django_db
def test_usernames_people_page_refuses_a_hidden_character_and_looks_through_an_old_one() -> None:
    boss = person("boss", "admin")
    # a HANGUL FILLER (NFKC: U+1160, a letter to Django's validator) shows nothing
    with pytest.raises(ValidationError) as refused:
        services.person_create(actor=boss, username="ad\u3164min2", role="viewer")
    assert refused.value.messages == [
        "'ad\\u1160min2' holds characters that show nothing or reorder the text (U+1160 HANGUL JUNGSEONG FILLER): it "
        "would look like another name. Choose a name without them."]
    assert AuditEvent.objects.get(action="people.refused").parameters["username"] == "ad\u1160min2"
    User.objects.create_user("admin2\u200b")  # made before this rule (or by manage.py)
    with pytest.raises(ValidationError, match="looks like the existing user"):
        services.person_create(actor=boss, username="admin2", role="viewer")
    assert not User.objects.filter(username="admin2").exists()
