"""URL configuration; the console issues add the pages."""

from __future__ import annotations

from django.urls import URLPattern

urlpatterns: list[URLPattern] = []
