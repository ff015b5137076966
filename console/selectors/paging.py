"""Paging for every list the pages and the API show, and the checks of what a request asks
for that every paged list shares: a page number names a page or answers 404 at once (before
anything is read), a partition filter longer than any partition path can be answers 400."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import BadRequest
from django.core.paginator import EmptyPage, Page, PageNotAnInteger, Paginator
from django.http import Http404

PAGE_SIZE = 50

# The longest partition path a table can have: Linux's PATH_MAX, in bytes (an S3 key is at most
# 1,024); a filter longer than this matches nothing on any table, so it is refused at once.
MAX_PARTITION_PATH_BYTES = 4096


def page_number(page: int | str | None, *, pages: int | None = None) -> int:
    """The page asked for (1 when not given) as a number from 1 (to `pages`, when the count of
    pages is known); anything else (not a whole number, 0, negative, past the end) is a 404,
    the same on every paged page and in the API."""
    if page is None or page == "":
        return 1
    try:
        number = int(page)
    except ValueError:
        raise Http404(f"There is no page {str(page)[:40]} (pages are numbered from 1).") from None
    if number < 1 or (pages is not None and number > max(pages, 1)):
        raise Http404(f"There is no page {number} (pages 1 to {max(pages or 1, 1)})." if pages is not None
                      else f"There is no page {number} (pages are numbered from 1).")
    return number


def partition_filter(partition: str | None) -> str:
    """A partition filter as given ("" for none); 400 when it is longer than a partition path
    can be (MAX_PARTITION_PATH_BYTES)."""
    value = partition or ""
    if len(value) > MAX_PARTITION_PATH_BYTES or len(value.encode()) > MAX_PARTITION_PATH_BYTES:
        raise BadRequest(f"A partition filter is a partition path, at most {MAX_PARTITION_PATH_BYTES} bytes; "
                         f"this one has {len(value.encode())}.")
    return value


def page_of(rows: Any, page: int | str | None, per_page: int = PAGE_SIZE, *,
            paginator: Paginator[Any] | None = None) -> Page[Any]:
    """Page `page` (1 when not given) of `rows`; a page that is not a number or lies past the
    end answers 404 rather than silently showing another page (`page_number`)."""
    paginator = paginator or Paginator(rows, per_page)
    number = page_number(page)
    try:
        return paginator.page(number)
    except (EmptyPage, PageNotAnInteger):
        if number == 1:
            return paginator.page(1)  # an empty list has one (empty) page
        raise Http404(f"There is no page {number} (pages 1 to {paginator.num_pages}).") from None
