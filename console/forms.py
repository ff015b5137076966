from __future__ import annotations

from django import forms


class RegisterTableForm(forms.Form):
    path = forms.CharField(max_length=1024, label="Base path or URI",
                           widget=forms.TextInput(attrs={"placeholder": "/lake/warehouse/trips", "size": 60}))


class TimelineFilterForm(forms.Form):
    action = forms.CharField(required=False)
    state = forms.CharField(required=False)
    since = forms.RegexField(regex=r"^\d{0,17}$", required=False, label="from (yyyyMMdd...)")
    until = forms.RegexField(regex=r"^\d{0,17}$", required=False, label="to (yyyyMMdd...)")
    search = forms.RegexField(regex=r"^\d{0,17}$", required=False, label="instant time starts with")
