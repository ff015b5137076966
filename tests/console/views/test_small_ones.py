"""The small ones of issue 43: the failed-writes page (a refusal in its own cell, not broken
mid-word, "Bytes" not empty, the write's time once, rollbacks numbered apart from restores), the
what-if row of a setting that considers no partition ("all" kept, not "0"), the irreversible
buttons styled as dangerous, the savepoint-delete placeholder whole, and empty charts drawn as a
sentence, not as axes from 0 to "1 B"."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.urls import reverse

from console import services
from console.models import Job, Table
from tests.console.helpers import ROOT, login
from tests.helpers import fake_failed_write

pytestmark = pytest.mark.django_db


def test_failed_writes_page_refusal_bytes_time_once_and_rollback_numbers(table: Table) -> None:
    commits = sorted(table.instants.filter(action="commit", state="COMPLETED").values_list("requested_time", flat=True))
    older = str(int(commits[0]) + 1)  # a failed write with completed commits after it: refused (Hudi's sequence rule)
    fake_failed_write(Path(table.path.removeprefix("file:")), older, markers=False)
    services.table_sync(table=table)
    Job.objects.create(table=table, kind=Job.Kind.RESTORE, target=commits[0])  # a restore takes the first id
    rollback = Job.objects.create(table=table, kind=Job.Kind.ROLLBACK, target=older)
    admin = login("admin")
    page = admin.get(reverse("console:failed_writes", args=[table.pk])).content.decode()
    row = page[page.index("<tbody>"):page.index("</tbody>")]
    cell = re.search(r'<td class="refusal" data-label="files to delete">(.*?)</td>', row, re.S)
    assert cell, row
    refusal = cell.group(1)
    assert "cannot be rolled back" in refusal and "validateRollbackCommitSequence" in refusal
    assert 'class="wrap"' not in row  # no break-anywhere cell for the sentence
    assert older not in re.sub(r'<[^>]+>', "", refusal)  # the row's own time once (its first cell), not again
    assert "this write" in refusal.lower() and not re.search(r">\s*file:", refusal)  # nor the table's location
    assert re.search(r'<td class="num" data-label="bytes"[^>]*>-</td>', row)  # Bytes says "-", not nothing
    css = (ROOT / "console" / "static" / "console" / "style.css").read_text()
    assert re.search(r"td\.refusal \{ word-break: normal;", css)
    rollbacks = page[page.index('id="rollbacks"'):]
    assert f'{reverse("console:job", args=[table.pk, rollback.pk])}">Rollback\n1</a>' in rollbacks
    assert rollback.number == 1 != rollback.pk  # its id is shared with restores, its number is not
    job_page = admin.get(reverse("console:job", args=[table.pk, rollback.pk])).content.decode()
    assert "<h1>Rollback 1 of" in job_page


def test_what_if_a_setting_that_considers_no_partition_keeps_all_not_0(table: Table) -> None:
    admin = login("admin")
    # 12 commits retained on a table of 12 completed commits (as the demo's tables under their own
    # setting, 10): no earliest commit to retain, so the clean considers no partition and keeps all
    estimate = services.estimate_request(table=table, user=None, commits=[1, 12], hours=[], enqueue=False)
    services.estimate_run(estimate=estimate)
    estimate.refresh_from_db()
    rows = {r["retained"]: r for r in estimate.result}
    assert rows[12]["partitions_considered"] == 0 and rows[12]["files_to_delete"] == 0 and rows[12]["why_nothing"]
    page = admin.get(reverse("console:retention", args=[table.pk]), {"estimate": estimate.pk}).content.decode()
    kept = re.findall(r'<td class="num" data-label="files kept">(.*?)</td>', page, re.S)
    assert len(kept) == 2 and "all" in kept[1] and kept[0].strip() == str(rows[1]["files_kept"]), kept


def test_irreversible_buttons_are_dangerous_and_the_delete_placeholder_is_whole(table: Table) -> None:
    commit = table.instants.filter(action="commit", state="COMPLETED").order_by("-requested_time")[0].requested_time
    admin_user = login("admin")
    services.savepoint_create(table=table, user=None, instant_time=commit, comment="kept", writers_stopped=True)
    services.table_sync(table=table)
    restore = admin_user.get(reverse("console:restore", args=[table.pk, commit])).content.decode()
    assert '<button type="submit" class="danger">Restore</button>' in restore
    savepoints = admin_user.get(reverse("console:savepoints", args=[table.pk])).content.decode()
    field = re.search(r'<input name="confirm" placeholder="([^"]+)" size="(\d+)"', savepoints)
    assert field and len(field.group(1)) <= int(field.group(2)), field  # the placeholder fits its box
    assert 'class="danger">Delete</button>' in savepoints
    css = (ROOT / "console" / "static" / "console" / "style.css").read_text()
    assert re.search(r"button\.danger \{ background: var\(--bad\)", css)


CHARTS_HARNESS = """
const fs = require("fs");
const made = [], notes = [];
const specs = JSON.parse(process.argv[3]);
function canvas(id) {
  const box = {replaceWith: (note) => notes.push([id, note.className, note.textContent])};
  return {dataset: {chart: id}, closest: () => box};
}
global.getComputedStyle = () => ({getPropertyValue: () => ""});
global.document = {
  documentElement: {}, addEventListener: () => {},
  getElementById: (id) => ({textContent: JSON.stringify(specs[id])}),
  createElement: () => ({}), querySelectorAll: () => Object.keys(specs).map(canvas),
};
global.window = {Chart: function (el) { made.push(el.dataset.chart); }};
eval(fs.readFileSync(process.argv[2], "utf8"));
window.cleanlineCharts.draw();
console.log(JSON.stringify({made, notes}));
"""


def test_an_empty_chart_is_a_sentence_not_axes_from_0_to_1_B(tmp_path: Path) -> None:
    node = shutil.which("node")
    assert node, "node is installed by make setup (scripts/ensure-node.sh)"
    harness = tmp_path / "harness.js"
    harness.write_text(CHARTS_HARNESS)
    specs = {"empty": {"type": "bar", "format": "bytes", "labels": ["a", "b"],
                       "datasets": [{"label": "bytes", "data": [0, None]}]},
             "full": {"type": "bar", "format": "bytes", "labels": ["a"], "datasets": [{"label": "bytes", "data": [5]}]}}
    out = subprocess.run([node, str(harness), str(ROOT / "console" / "static" / "console" / "charts.js"),
                          json.dumps(specs)], capture_output=True, text=True, timeout=30, check=True).stdout
    drawn = json.loads(out)
    assert drawn["made"] == ["full"]
    assert drawn["notes"] == [["empty", "hint chart-empty", "Nothing to chart yet: every value is 0."]]
