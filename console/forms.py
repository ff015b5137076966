from __future__ import annotations

from datetime import datetime

from django import forms

from console.roles import ROLES
from timeline import CleanPolicy


class RegisterTableForm(forms.Form):
    path = forms.CharField(max_length=1024, label="Base path or URI", widget=forms.TextInput(
        attrs={"placeholder": "/lake/warehouse/trips or s3://bucket/warehouse/trips", "size": 60}))


# A date (yyyy-mm-dd), a date and time (yyyy-mm-ddThh:mm[:ss[.SSS]]) or an instant time's
# leading digits (yyyyMMddHHmmssSSS), as the timeline's From and To take them.
TYPED_TIME = r"^(\d{0,17}|\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?)?)$"


class TimelineFilterForm(forms.Form):
    """The timeline's filters. From and To are days (date pickers) or times in `zone`, the
    viewer's zone the page's script fills in (the console's TIME_ZONE without it); the search
    finds digits anywhere in an instant's requested or completion time."""

    action = forms.CharField(required=False)
    state = forms.CharField(required=False)
    since = forms.RegexField(regex=TYPED_TIME, required=False, label="from",
                             widget=forms.TextInput(attrs={"type": "date"}))
    until = forms.RegexField(regex=TYPED_TIME, required=False, label="to",
                             widget=forms.TextInput(attrs={"type": "date"}))
    search = forms.RegexField(regex=r"^[\d\s:.T-]{1,40}([A-Za-z]{2,5}([+-]\d{1,4}(:\d{2})?)?)?\s*$", required=False,
                              label="instant time contains",
                              widget=forms.TextInput(attrs={"type": "search", "inputmode": "numeric", "size": 18,
                                                            "placeholder": "e.g. 2024-01-05 12:30 or 1230"}))
    zone = forms.CharField(required=False, widget=forms.HiddenInput)  # an unknown zone is ignored

    def _typed_time(self, name: str) -> str:
        value: str = self.cleaned_data.get(name, "")
        if "-" in value:
            try:
                datetime.fromisoformat(value)
            except ValueError:
                raise forms.ValidationError(f"{value} is not a date.") from None
        return value

    def clean_since(self) -> str:
        return self._typed_time("since")

    def clean_until(self) -> str:
        return self._typed_time("until")


class PlanForm(forms.Form):
    """Policy and retention for a plan; blank fields take the table's settings."""

    policy = forms.ChoiceField(required=False, choices=[("", "table's policy"), *(
        (p.value, p.value.lower().replace("_", " ")) for p in CleanPolicy)])
    commits_retained = forms.IntegerField(required=False, min_value=0, label="commits retained")
    file_versions_retained = forms.IntegerField(required=False, min_value=1, label="file versions retained")
    hours_retained = forms.IntegerField(required=False, min_value=0, label="hours retained")
    allow_short_retention = forms.BooleanField(required=False, label="allow less retention than the table's settings")
    listing = forms.ChoiceField(required=False, initial="auto", label="list the table", choices=[
        ("auto", "auto: through the metadata table when it is valid, else storage (Hudi's choice)"),
        ("metadata", "through the metadata table"), ("storage", "from storage")])


class DecisionForm(forms.Form):
    note = forms.CharField(required=False, max_length=2000, widget=forms.TextInput(attrs={"size": 50}))


class TableSettingsForm(forms.Form):
    auto_clean = forms.BooleanField(required=False, label="automatic mode")
    auto_max_files = forms.IntegerField(min_value=0, label="approve automatically up to (files)")
    auto_max_bytes = forms.IntegerField(min_value=0, label="and up to (bytes)")
    write_options = forms.CharField(
        required=False, label="Hudi writer options (KEY=VALUE, one a line)",
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60, "placeholder": "hoodie.write.concurrency.mode="
                                     "optimistic_concurrency_control\nhoodie.write.lock.provider=..."}))

    def clean_write_options(self) -> dict[str, str]:
        """Hudi's `hoodie.*` keys only, one KEY=VALUE a line; blank lines and # comments ignored."""
        options: dict[str, str] = {}
        for number, line in enumerate(self.cleaned_data.get("write_options", "").splitlines(), start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, sep, value = line.partition("=")
            key = key.strip()
            if not sep or not key.startswith("hoodie."):
                raise forms.ValidationError(f"line {number}: expected hoodie.KEY=VALUE")
            options[key] = value.strip()
        return options


# The roles a user may be given on the People page ("" for none).
ROLE_CHOICES = [*((role, role) for role in ROLES), ("", "no role")]


class PersonCreateForm(forms.Form):
    """A new user of the console (the People page); a blank password is generated and shown once.
    The fields only carry the input: the people service validates it, so that every refusal is
    audited, and the page shows it again with the reason."""

    username = forms.CharField(required=False, widget=forms.TextInput(attrs={"autocomplete": "off", "required": True,
                                                                             "maxlength": 150}))
    first_name = forms.CharField(required=False, label="first name")
    last_name = forms.CharField(required=False, label="last name")
    email = forms.CharField(required=False, label="e-mail", widget=forms.EmailInput)
    role = forms.CharField(required=False, initial="operator", widget=forms.Select(choices=ROLE_CHOICES))
    password = forms.CharField(required=False, strip=False, label="initial password (blank: generated)",
                               widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}))


class PersonRoleForm(forms.Form):
    role = forms.CharField(required=False, widget=forms.Select(choices=ROLE_CHOICES))


# Settings lists as typed: "1..10", "1,2,3,5,10", "1..5,10" (what `cleanline clean what-if` takes).
SETTINGS_LIST = r"^\s*(\d+(\s*\.\.\s*\d+)?)(\s*,\s*\d+(\s*\.\.\s*\d+)?)*\s*$"


def settings_list(text: str) -> list[int]:
    """'1..5,10' -> [1, 2, 3, 4, 5, 10] (sorted, each once)."""
    found: set[int] = set()
    for piece in filter(None, (p.strip() for p in text.split(","))):
        low, _, high = piece.partition("..")
        first, last = int(low), int(high or low)
        if last < first:
            raise forms.ValidationError(f"{piece}: the range runs backwards.")
        if last - first > 1000:
            raise forms.ValidationError(f"{piece}: too many settings.")
        found.update(range(first, last + 1))
    return sorted(found)


class RetentionEstimateForm(forms.Form):
    """What-if retention: the commits-retained and hours-retained settings to estimate."""

    commits = forms.RegexField(regex=SETTINGS_LIST, required=False, initial="1..10", label="commits retained",
                               widget=forms.TextInput(attrs={"placeholder": "1..10", "size": 14}))
    hours = forms.RegexField(regex=SETTINGS_LIST, required=False, initial="24,72,168", label="hours retained",
                             widget=forms.TextInput(attrs={"placeholder": "24,72,168", "size": 14}))

    def clean_commits(self) -> list[int]:
        return settings_list(self.cleaned_data.get("commits") or "")

    def clean_hours(self) -> list[int]:
        return settings_list(self.cleaned_data.get("hours") or "")
