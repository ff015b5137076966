"""What a username may not hide, and the one name failed sign-ins are counted under.

A username shown on a page must read as the name it is. Characters that show nothing (Unicode's
`Default_Ignorable_Code_Point`: ZERO WIDTH SPACE U+200B, SOFT HYPHEN U+00AD, HANGUL FILLER U+3164,
the variation selectors), format and bidirectional controls (category Cf: LRM, RLM, U+202A-U+202E,
U+2066-U+2069), control characters (Cc), line and paragraph separators (Zl, Zp), spaces other than
U+0020, the blank braille pattern U+2800, and code points with no character (unassigned, private
use, surrogates) let `admin2<U+200B>` or `<U+202E>admin2` stand beside `admin2` on the People page
looking the same. `hidden_characters` names them: a new username holding one is refused
(`services.people._look_alike`, for the People page and for the users an identity provider
signs in), and the look-alike comparison drops them from existing names.

`lockout_key` is the name failed sign-ins are counted under (django-axes, through
`console.signin.throttle`), whatever the backend: Unicode's NFKC_Casefold (NFKC, case folded, the
default ignorables and the characters above removed) with runs of spaces made one, so that `Bob`,
`bOb`, `ｂｏｂ` and ` bob` are the one name that an LDAP directory's `caseIgnoreMatch` finds for all
of them."""

from __future__ import annotations

import unicodedata

import regex

__all__ = ["hidden_characters", "lockout_key", "shown", "without_hidden"]

HIDDEN = regex.compile(r"[\p{Default_Ignorable_Code_Point}\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}"
                       r"\p{Zs}\u2800--\x20]", flags=regex.V1)


def hidden_characters(username: str) -> list[str]:
    """The characters of `username` that show nothing or reorder the text, each once, named
    (`U+200B ZERO WIDTH SPACE`); [] for a name that reads as it is."""
    found = dict.fromkeys(HIDDEN.findall(username))
    return [f"U+{ord(char):04X} {unicodedata.name(char, '')}".strip() for char in found]


def shown(username: str) -> str:
    """`username` with each hidden character written as its escape (`admin2\\u200b`), for the
    audit log and the messages that name a refused username."""
    return str(HIDDEN.sub(lambda found: found.group().encode("unicode_escape").decode(), username))


def without_hidden(username: str) -> str:
    """`username` without the characters `hidden_characters` names."""
    return str(HIDDEN.sub("", username))


def lockout_key(username: str) -> str:
    """The name the failed sign-ins of `username` count towards: NFKC_Casefold of it with its
    spaces (tabs, line breaks) trimmed and made single and the hidden characters removed."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", username).casefold())
    return " ".join(without_hidden(" ".join(folded.split())).split())
