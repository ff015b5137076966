from __future__ import annotations

from django import forms

from timeline import CleanPolicy


class RegisterTableForm(forms.Form):
    path = forms.CharField(max_length=1024, label="Base path or URI", widget=forms.TextInput(
        attrs={"placeholder": "/lake/warehouse/trips or s3://bucket/warehouse/trips", "size": 60}))


class TimelineFilterForm(forms.Form):
    action = forms.CharField(required=False)
    state = forms.CharField(required=False)
    since = forms.RegexField(regex=r"^\d{0,17}$", required=False, label="from (yyyyMMdd...)")
    until = forms.RegexField(regex=r"^\d{0,17}$", required=False, label="to (yyyyMMdd...)")
    search = forms.RegexField(regex=r"^\d{0,17}$", required=False, label="instant time starts with")


class PlanForm(forms.Form):
    """Policy and retention for a plan; blank fields take the table's settings."""

    policy = forms.ChoiceField(required=False, choices=[("", "table's policy"), *(
        (p.value, p.value.lower().replace("_", " ")) for p in CleanPolicy)])
    commits_retained = forms.IntegerField(required=False, min_value=0, label="commits retained")
    file_versions_retained = forms.IntegerField(required=False, min_value=1, label="file versions retained")
    hours_retained = forms.IntegerField(required=False, min_value=0, label="hours retained")
    allow_short_retention = forms.BooleanField(required=False, label="allow less retention than the table's settings")


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
