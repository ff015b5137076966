"""A service's refusal in two wordings: the pages' (a box to tick, a name to type) and the API's
(the JSON field to send). Views show `messages`; the REST API answers `api_message`."""

from __future__ import annotations

from django.core.exceptions import ValidationError


class Refused(ValidationError):
    """A `ValidationError` whose message for an API caller names the field to send, e.g.
    `"allow_short_retention": true`, where the page's names the control."""

    def __init__(self, message: str, *, api: str) -> None:
        super().__init__(message)
        self.api_message = api


def api_words(exc: ValidationError) -> str:
    """What an API caller is told: the API's wording of a `Refused`, else the messages."""
    return exc.api_message if isinstance(exc, Refused) else "; ".join(exc.messages)
