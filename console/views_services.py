"""The Table services page (issue 41): a table's pending compactions, log compactions and
clusterings with their plans, its compaction backlog per partition and file group (paged), its
metadata table's compaction, and "Why is nothing compacting?", read from the lake now
(`console.selectors.table_services`), with "Schedule a compaction" (`console.views_compaction`) and
the table's latest compactions. Thin: authorise, call the selector, render."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render

from console.models import Table
from console.permissions import AuthenticatedHttpRequest
from console.selectors import table_services as selectors
from console.views import table_page


@table_page(reads_lake=True)
def table_services(request: AuthenticatedHttpRequest, table: Table) -> HttpResponse:
    page = selectors.services_page(table, page=request.GET.get("page"),
                                   partitions_page=request.GET.get("partitions_page"))
    return render(request, "console/table_services.html", {"table": table, "page": page,
                                                           "stuck_kind": selectors.STUCK_KIND,
                                                           "compactions": table.compactions.all()[:5]})
