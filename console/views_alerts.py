"""Alerts set up in the console: the lake-wide default of each rule and the channels (e-mail
addresses, webhooks) with a "send a test" button each; admins change them, anyone who may view
tables sees them. Thin views over console/services/alert_setup.py and console/alerts_setup.py."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from console import permissions
from console.alerts import THRESHOLDS, setting_threshold
from console.alerts_setup import all_channels, channels_from_console, lake_enabled, lake_rules
from console.models import AlertKind
from console.models_alerts import AlertChannel, ChannelKind
from console.permissions import AuthenticatedHttpRequest
from console.services import alert_setup


class LakeRulesForm(forms.Form):
    """Every rule's lake-wide default: on or off, and its threshold where it has one."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        lake = lake_rules()
        for kind in AlertKind.values:
            self.fields[f"enabled_{kind}"] = forms.BooleanField(required=False, initial=lake_enabled(kind, lake))
            if kind in THRESHOLDS:
                found = lake.get(kind)
                self.fields[f"threshold_{kind}"] = forms.FloatField(
                    required=False, min_value=0, initial=found.threshold if found is not None else None)


class ChannelForm(forms.Form):
    kind = forms.ChoiceField(choices=ChannelKind.choices)
    target = forms.CharField(max_length=2048)


def _page(request: AuthenticatedHttpRequest, form: LakeRulesForm, channel_form: ChannelForm) -> HttpResponse:
    rules = [{"kind": kind, "label": AlertKind(kind).label,
              "unit": THRESHOLDS[AlertKind(kind)].unit if kind in THRESHOLDS else "",
              "setting": THRESHOLDS[AlertKind(kind)].setting if kind in THRESHOLDS else "",
              "setting_value": setting_threshold(kind), "enabled_field": form[f"enabled_{kind}"],
              "threshold_field": form[f"threshold_{kind}"] if kind in THRESHOLDS else None}
             for kind in AlertKind.values]
    return render(request, "console/alerts_setup.html", {
        "rules": rules, "form": form, "channel_form": channel_form, "channels": all_channels(),
        "from_console": channels_from_console(), "can_change": permissions.may(request.user, "change_settings")})


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def alerts_setup(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The lake-wide defaults (saved by admins) and the channels."""
    permissions.require_view(request.user)
    if request.method != "POST":
        return _page(request, LakeRulesForm(), ChannelForm())
    permissions.require(request.user, permissions.SETTINGS)
    form = LakeRulesForm(request.POST)
    if not form.is_valid():
        return _page(request, form, ChannelForm())
    alert_setup.lake_rules_update(user=request.user, values=form.cleaned_data)
    messages.success(request, "Lake-wide alert defaults saved: every table's rule that follows the lake follows "
                              "them from the next check.")
    return redirect("console:alerts_setup")


@login_required
@require_POST
def channel_add(request: AuthenticatedHttpRequest) -> HttpResponse:
    permissions.require(request.user, permissions.SETTINGS)
    form = ChannelForm(request.POST)
    if not form.is_valid():
        return _page(request, LakeRulesForm(), form)
    try:
        alert_setup.channel_add(user=request.user, kind=form.cleaned_data["kind"], target=form.cleaned_data["target"])
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
    else:
        messages.success(request, "Channel added: alerts go to the console's channels now.")
    return redirect("console:alerts_setup")


@login_required
@require_POST
def channel_decide(request: AuthenticatedHttpRequest, channel_id: int, change: str) -> HttpResponse:
    """Turn one of the console's channels on or off, or remove it."""
    permissions.require(request.user, permissions.SETTINGS)
    channel = get_object_or_404(AlertChannel, pk=channel_id)
    if change == "remove":
        alert_setup.channel_remove(user=request.user, channel=channel)
        messages.success(request, "Channel removed.")
    else:
        alert_setup.channel_change(user=request.user, channel=channel, enabled=change == "on")
        messages.success(request, f"Channel turned {change}.")
    return redirect("console:alerts_setup")


@login_required
@require_POST
def channel_test(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Send a test message to the channel named by `channel`."""
    permissions.require(request.user, permissions.SETTINGS)
    try:
        sent = alert_setup.channel_test(user=request.user, key=request.POST.get("channel", ""))
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
    else:
        messages.success(request, f"A test was sent to {sent.label} {sent.shown}.")
    return redirect("console:alerts_setup")
