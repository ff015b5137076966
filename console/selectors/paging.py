"""Paging for every list the pages show."""

from __future__ import annotations

from typing import Any

from django.core.paginator import EmptyPage, Page, PageNotAnInteger, Paginator
from django.http import Http404

PAGE_SIZE = 50


def page_of(rows: Any, page: int | str | None, per_page: int = PAGE_SIZE, *,
            paginator: Paginator[Any] | None = None) -> Page[Any]:
    """Page `page` (1 when not given) of `rows`; a page that is not a number or lies past the
    end answers 404 rather than silently showing another page."""
    paginator = paginator or Paginator(rows, per_page)
    try:
        return paginator.page(page or 1)
    except (EmptyPage, PageNotAnInteger):
        if str(page) == "1":
            return paginator.page(1)  # an empty list has one (empty) page
        raise Http404(f"There is no page {page} (pages 1 to {paginator.num_pages}).") from None
