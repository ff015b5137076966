"""The Table services page (issue 41) on a copy of a real merge-on-read table (log files, a
metadata table) with a compaction left inflight by a job that died: the pending service with its
plan and heartbeat, linked to the doctor's stuck-table-service finding and repair; "Why is
nothing compacting?" with the writers' options of the table's settings; the backlog per partition and file group, paged,
equal to the library's; the metadata table's compaction; and the same backlog on the lake
dashboard (column and chart) and on the table's history (the snapshot the sync keeps)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.urls import reverse

from console import services
from console.models import Table
from console.selectors import table_services as selectors
from console.services.health import health_check, repair_request
from console.services.history import snapshot_record
from tests.console.helpers import login, person
from tests.doctor.helpers import OLD, age_tree, stuck_compaction
from timeline import HudiTable

pytestmark = pytest.mark.django_db

MOR = "sample_table/mor/avro/v9_timebasedkeygen_nonhivestyle"  # log files, a metadata table
COW = "sample_table/cow/v9_txns_simple_nometa"


def chart(content: bytes, name: str) -> dict:  # type: ignore[type-arg]
    return json.loads(content.split(f'id="{name}" type="application/json">'.encode())[1].split(b"</script>")[0])


def planted(console_table) -> Table:  # type: ignore[no-untyped-def]
    """A registered copy of MOR with a compaction inflight since OLD, no heartbeat, a partial base
    file: synced again and checked by the doctor, as a sync task does."""
    table = console_table(MOR)
    stuck_compaction(Path(table.path.removeprefix("file:")), OLD)
    age_tree(Path(table.path.removeprefix("file:")))
    services.table_sync(table=table)
    health_check(table=table, force=True)
    table.refresh_from_db()
    return table


# the writers' options of the table's settings: a trigger at 10 delta commits (Hudi's default is 5)
OPTIONS = {"hoodie.compact.inline.max.delta.commits": "10"}


def test_table_services_page_shows_the_stuck_compaction_why_and_the_backlog(console_table, monkeypatch) -> None:
    table = planted(console_table)
    table = services.table_settings_update(table=table, user=None, auto_clean=False, auto_max_files=1,
                                           auto_max_bytes=1, write_options=OPTIONS)
    lake = HudiTable.open(table.path).inspect
    shown, why = lake.table_services(), lake.why_not_compacting(OPTIONS)
    assert [(p.instant.requested_time, p.is_inflight) for p in shown.pending] == [(OLD, True)]
    viewer = login("viewer")
    url = reverse("console:table_services", args=[table.pk])
    overview = viewer.get(reverse("console:overview", args=[table.pk])).content.decode()
    assert 'id="table-services-link"' in overview and f'class="services-link" href="{url}"' in overview

    page = viewer.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert f'data-instant="{OLD}" data-kind="compaction"' in html and 'class="heartbeat-none"' in html
    assert "state-inflight" in html and 'class="badge warn">stuck</span>' in html
    assert reverse("console:repair_preview", args=[table.pk, "stuck-table-service"]) in html
    (row,) = page.context["page"].rows
    assert row.heartbeat == "none" and row.stuck.startswith(f"compaction {OLD}") and row.repair is None
    assert row.log_files == len(shown.pending[0].slices[0].log_files) > 0
    assert f'title="{OLD}"' in html  # the instant shown as a time in the user's zone, the raw instant on hover
    # why, with the writers' options of the table's settings: each reason names its setting or instant
    reasons = page.context["page"].why.reasons
    assert [r.kind for r in reasons] == [r.kind for r in why.reasons]
    trigger = next(r for r in reasons if r.kind.name == "TRIGGER_NOT_MET")
    since = shown.since_compaction
    assert since is not None and trigger.instant == since.since
    assert trigger.setting == "hoodie.compact.inline.max.delta.commits"
    assert 'data-kind="TRIGGER_NOT_MET"' in html and "<code>hoodie.compact.inline.max.delta.commits</code>" in html
    assert f"{10 - since.count} more delta commits" in html and f'title="{since.since.requested_time}"' in html
    # the backlog, per partition and per file group, as the library counts it
    backlog = shown.backlog
    assert backlog.groups and page.context["page"].groups.paginator.count == len(backlog.groups)
    assert html.count("<tr>", html.index('id="backlog-partitions"'), html.index("</table>", html.index(
        'id="backlog-partitions"'))) == len(backlog.partitions) + 1
    assert 'id="mdt-compaction"' in html and 'id="mdt-delta-commits"' in html
    # paged: one file group a page, the last page shows the last one; past the end, 404
    monkeypatch.setattr(selectors, "GROUPS_PER_PAGE", 1)
    last = viewer.get(url, {"page": str(len(backlog.groups))})
    assert [g.file_id for g in last.context["page"].groups] == [backlog.groups[-1].file_id]
    assert viewer.get(url, {"page": str(len(backlog.groups) + 1)}).status_code == 404

    # once a repair is asked for, the row links to it
    repair = repair_request(table=table, user=person("oper", "operator"), kind="stuck-table-service")
    again = viewer.get(url).content.decode()
    assert reverse("console:repair", args=[table.pk, repair.pk]) in again

    # the sync kept the same backlog for the dashboard, the metrics and the history
    kept = table.services
    assert kept["delta_commits"] == shown.since_compaction.count  # type: ignore[union-attr]
    assert kept["backlog"]["log_bytes"] == backlog.log_bytes > 0
    assert [(p["instant"], p["state"], p["kind"]) for p in kept["pending"]] == [(OLD, "inflight", "compaction")]
    board = viewer.get(reverse("console:home"))
    assert f'href="{url}"' in board.content.decode()
    assert chart(board.content, "chart-backlog")["labels"] == [table.name]
    assert chart(board.content, "chart-backlog")["datasets"][0]["data"] == [backlog.log_bytes]
    snapshot = snapshot_record(table=table)
    assert snapshot is not None and snapshot.backlog_log_bytes == backlog.log_bytes
    assert snapshot.backlog_delta_commits == kept["delta_commits"]
    history = viewer.get(reverse("console:table_history", args=[table.pk]), {"days": "7"})
    assert history.context["history"].series["backlog_log_bytes"][-1] == backlog.log_bytes
    assert chart(history.content, "history-backlog-bytes")["datasets"][0]["data"][-1] == backlog.log_bytes


def test_table_services_page_of_a_copy_on_write_table_says_why_none(console_table) -> None:
    table = console_table(COW)
    page = login("viewer").get(reverse("console:table_services", args=[table.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-kind="NOT_MERGE_ON_READ"' in html and 'id="no-pending"' in html and 'id="backlog-title"' not in html
    assert table.services["delta_commits"] is None and table.services["backlog"] is None
    board = login("operator").get(reverse("console:home")).content
    assert chart(board, "chart-backlog")["labels"] == []
