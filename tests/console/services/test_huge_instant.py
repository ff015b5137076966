"""A huge instant (issue 33): a 200 MB v6 commit is synced with bounded memory, and its page and
the API's instant view answer without decoding it (its size, the sync's summary, write stats a
page at a time, a raw download streamed); small state files above a lowered
CLEANLINE_INSTANT_INLINE_MAX_BYTES page and download the same way. Memory is measured as the
growth of this process's peak resident set (VmHWM, reset through /proc/self/clear_refs)."""

from __future__ import annotations

import hashlib
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse

from console import services
from console.models import Instant, Table
from console.models_write_stats import WriteStatsIndex
from tests.helpers import FIXTURES, S3Server, huge_commit, huge_file_id, peak_growth, unzip_table

pytestmark = pytest.mark.django_db

SOURCE = "sample_table/cow/v6_simplekeygen_nonhivestyle"
HUGE_TIME = "20240418172900000"
SMALL_COMMIT = "20240418172804498"  # two write stats: partition 30's, then partition 10's
PARTITIONS = ("10", "20", "30")
MiB = 1 << 20
BOUND = 64 * MiB  # what a request or the sync may add to the peak, for a file of over 200 MB


@pytest.fixture(scope="module")
def huge_lake(fixture_lake: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, int]:
    """A copy of a v6 fixture table with a 200 MB completed commit added (built once): the lake
    root, the commit's path and its count of write stats."""
    root = tmp_path_factory.mktemp("huge-lake")
    base = Path(shutil.copytree(fixture_lake[SOURCE], root / "trips"))
    path, count = huge_commit(str(base / ".hoodie"), HUGE_TIME, PARTITIONS, size=200 * MiB)
    return root, path, count


def registered(settings: Any, root: Path) -> Table:
    settings.CLEANLINE_ALLOWED_ROOTS = [str(root)]
    return services.table_register(path=str(root / "trips"), user=None)


def client_of(role: str | None) -> Client:
    user = User.objects.create_user(f"user-{role}")
    if role is not None:
        user.groups.add(Group.objects.get(name=role))
    client = Client()
    client.force_login(user)
    return client


def test_huge_instant_sync_sums_the_commit_with_bounded_memory(settings: Any, huge_lake: tuple[Path, str, int]) -> None:
    root, path, count = huge_lake
    table = registered(settings, root)
    result, grown = peak_growth(lambda: services.table_sync(table=table))
    assert result.changed
    row = table.instants.get(requested_time=HUGE_TIME)
    assert (row.partitions, row.files, row.records, row.bytes) == (
        3, count, count * (count + 1) // 2, 1000 * count + count * (count - 1) // 2)
    assert Path(path).stat().st_size > 200 * MiB
    assert grown < BOUND, f"the sync grew the peak by {grown / MiB:.0f} MiB"


@pytest.fixture
def synced(settings: Any, huge_lake: tuple[Path, str, int]) -> tuple[Table, Instant, str, int]:
    root, path, count = huge_lake
    table = registered(settings, root)
    services.table_sync(table=table)
    return table, table.instants.get(requested_time=HUGE_TIME), path, count


def test_huge_instant_page_and_api_answer_without_decoding_the_file(synced: tuple[Table, Instant, str, int]) -> None:
    table, row, path, count = synced
    viewer = client_of("viewer")
    page_url = reverse("console:instant", args=[table.pk, row.pk])
    page, grown = peak_growth(lambda: viewer.get(page_url))
    assert page.status_code == 200
    assert grown < BOUND, f"the page grew the peak by {grown / MiB:.0f} MiB"
    text = page.content.decode()
    assert "too large to show here" in text and "Download the raw file" in text
    assert reverse("console:instant_raw", args=[table.pk, row.pk, "completed"]) in text
    assert f"of {count}" in text and f"{count} files" in text  # the sync's summary
    assert text.count("<tr><td data-label=\"partition\">") == 50
    assert huge_file_id(0) in text and huge_file_id(147) in text
    assert huge_file_id(150) not in text and "page=2" in text

    token = services.token_create(actor=User.objects.get(username="user-viewer"),
                                  owner=User.objects.get(username="user-viewer"), name="t")[1]
    api = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    url = f"/api/v1/tables/{table.pk}/instants/{row.pk}"
    answer, grown = peak_growth(lambda: api.get(url, {"page": 3, "page_size": 10}))
    assert answer.status_code == 200
    assert grown < BOUND, f"the API grew the peak by {grown / MiB:.0f} MiB"
    body = answer.json()
    completed = body["contents"][0]
    assert completed["too_large"] and completed["content"] is None and completed["size"] == Path(path).stat().st_size
    assert completed["download"] == f"/api/v1/tables/{table.pk}/instants/{row.pk}/files/completed"
    stats = body["write_stats"]
    assert (stats["page"], stats["page_size"], stats["count"], stats["has_next"]) == (3, 10, count, True)
    assert [s["file_id"] for s in stats["items"]] == [huge_file_id(3 * k) for k in range(20, 30)]
    assert stats["items"][0]["num_writes"] == 61 and stats["items"][0]["partition"] == "10"


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    started = time.monotonic()
    result = call()
    return result, time.monotonic() - started


def test_huge_instant_any_page_or_partition_answers_at_once(synced: tuple[Table, Instant, str, int]) -> None:
    """Issue 38: the sync indexed the 200 MB commit's write stats, so its last page, a partition's
    last page, a page far past the end (404) and a filter longer than any partition path (400)
    answer in well under a second, on the page and in the API."""
    table, row, _, count = synced
    index = WriteStatsIndex.objects.get(table=table, requested_time=HUGE_TIME)
    assert index.complete and index.count == count
    viewer = client_of("viewer")
    url = reverse("console:instant", args=[table.pk, row.pk])
    last, in_30 = -(-count // 50), len(range(2, count, 3))
    final = huge_file_id(2 + 3 * (in_30 - 1))  # the file's last stat: partition 30's last
    answer, took = timed(lambda: viewer.get(url, {"page": last}))
    assert answer.status_code == 200 and took < 1, took
    text = answer.content.decode()
    assert final in text and "next</a>" not in text
    pages_of_30 = -(-in_30 // 50)
    answer, took = timed(lambda: viewer.get(url, {"partition": "30", "page": pages_of_30}))
    assert answer.status_code == 200 and took < 1, took
    text = answer.content.decode()
    assert final in text and huge_file_id(2 + 3 * 50 * (pages_of_30 - 1)) in text  # the page's first
    assert huge_file_id(2 + 3 * (50 * (pages_of_30 - 1) - 1)) not in text
    for query, status in (({"page": 999999999999}, 404), ({"page": last + 1}, 404), ({"page": -1}, 404),
                          ({"partition": "30/" * 2000}, 400), ({"partition": "30", "page": last}, 404)):
        answer, took = timed(lambda q=query: viewer.get(url, q))  # type: ignore[misc]
        assert answer.status_code == status and took < 1, (query, answer.status_code, took)
    nowhere, took = timed(lambda: viewer.get(url, {"partition": "40"}))
    assert nowhere.status_code == 200 and took < 1 and huge_file_id(0) not in nowhere.content.decode()

    user = User.objects.get(username="user-viewer")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {services.token_create(actor=user, owner=user, name='t')[1]}")
    path = f"/api/v1/tables/{table.pk}/instants/{row.pk}"
    answer, took = timed(lambda: api.get(path, {"page": last, "page_size": 50}))
    stats = answer.json()["write_stats"]
    assert answer.status_code == 200 and took < 1, took
    assert stats["items"][-1]["file_id"] == final and not stats["has_next"]
    for query, status in (({"page": 999999999999}, 404), ({"partition": "x" * 5000}, 400)):
        answer, took = timed(lambda q=query: api.get(path, q))  # type: ignore[misc]
        assert answer.status_code == status and took < 1, (query, answer.status_code, took)
        assert answer["Content-Type"] == "application/problem+json"


def test_huge_instant_raw_download_streams_the_exact_bytes(synced: tuple[Table, Instant, str, int]) -> None:
    table, row, path, _ = synced

    def download() -> tuple[int, str, str]:
        response = client_of("viewer").get(reverse("console:instant_raw", args=[table.pk, row.pk, "completed"]))
        digest = hashlib.sha256()
        for chunk in response.streaming_content:  # type: ignore[attr-defined]
            digest.update(chunk)
        return response.status_code, response["Content-Disposition"], digest.hexdigest()

    (status, disposition, digest), grown = peak_growth(download)
    assert status == 200 and f'filename="{HUGE_TIME}.commit"' in disposition
    assert digest == hashlib.sha256(Path(path).read_bytes()).hexdigest()
    assert grown < BOUND, f"the download grew the peak by {grown / MiB:.0f} MiB"


@pytest.fixture
def small(console_table: Callable[[str], Table], settings: Any) -> tuple[Table, Instant]:
    """The fixture table with every state file above 100 bytes counted as too large."""
    table = console_table(SOURCE)
    settings.CLEANLINE_INSTANT_INLINE_MAX_BYTES = 100
    return table, table.instants.get(requested_time=SMALL_COMMIT)


def test_huge_instant_write_stats_page_and_filter_by_partition(small: tuple[Table, Instant]) -> None:
    table, row = small
    viewer = client_of("viewer")
    url = reverse("console:instant", args=[table.pk, row.pk])
    first = viewer.get(url).content.decode()
    assert "too large to show here" in first and "partitionToWriteStats" not in first
    assert "30/6db57019" in first and "10/97de74b1" in first and "page=2" not in first
    assert viewer.get(url, {"page": 2}).status_code == 404 and viewer.get(url, {"page": "x"}).status_code == 404
    only = viewer.get(url, {"partition": "10"}).content.decode()
    assert "10/97de74b1" in only and "30/6db57019" not in only and "every partition" in only

    token = services.token_create(actor=User.objects.get(username="user-viewer"),
                                  owner=User.objects.get(username="user-viewer"), name="t")[1]
    api = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    path = f"/api/v1/tables/{table.pk}/instants/{row.pk}"

    def files(**query: Any) -> tuple[list[str], bool]:
        body = api.get(path, query).json()["write_stats"]
        return [s["path"].split("_")[0] for s in body["items"]], body["has_next"]

    assert files(page_size=1) == (["30/6db57019-98ee-480e-8eb1-fb3de48e1c24-0"], True)
    assert files(page_size=1, page=2) == (["10/97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0"], False)
    assert files(partition="10") == (["10/97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0"], False)
    assert api.get(path, {"page_size": 1, "page": 3}).status_code == 404


def test_huge_instant_a_page_past_the_count_or_a_filter_too_long_is_refused_before_the_file_is_read(
        small: tuple[Table, Instant]) -> None:
    """Issue 38: a file the sync did not index (it was small then) is still refused at once: a
    page past the sync's count of its stats is a 404 and a filter longer than a path can be a
    400 before the file is read (it is unreadable past its first bytes here)."""
    table, row = small
    on_disk = Path(table.path.removeprefix("file:")) / ".hoodie" / f"{SMALL_COMMIT}.commit"
    on_disk.write_bytes(b'{\n  "partitionToWriteStats" : {\n    "30" : [ {\n      "fileId" : ' + b"?" * 200)
    viewer = client_of("viewer")
    url = reverse("console:instant", args=[table.pk, row.pk])
    assert viewer.get(url, {"page": 2}).status_code == 404
    assert viewer.get(url, {"partition": "30/" * 2000}).status_code == 400
    token = services.token_create(actor=User.objects.get(username="user-viewer"),
                                  owner=User.objects.get(username="user-viewer"), name="t")[1]
    api = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    path = f"/api/v1/tables/{table.pk}/instants/{row.pk}"
    assert api.get(path, {"page": 2}).status_code == 404
    assert api.get(path, {"page": 2, "page_size": 1}).status_code == 409  # within the count: read, and unreadable
    assert api.get(path, {"partition": "x" * 5000}).status_code == 400


def test_huge_instant_s3_commit_pages_from_its_index_without_reading_the_file_again(
        settings: Any, s3_server: S3Server, tmp_path: Path) -> None:
    """Issue 38 on S3: the sync indexes a commit above the limit from the one read it makes; a page
    of its write stats, or a partition's, then costs the page's check of the file's first bytes
    (one GET) and nothing more, whichever page is asked for."""
    bucket = s3_server.new_bucket()
    uri = s3_server.upload(unzip_table(FIXTURES / f"{SOURCE}.zip", tmp_path / "upload"), bucket,
                           key_prefix="lake/trips")
    settings.CLEANLINE_ALLOWED_ROOTS = [f"s3://{bucket}/lake"]
    settings.CLEANLINE_INSTANT_INLINE_MAX_BYTES = 100
    table = services.table_register(path=uri, user=None)
    services.table_sync(table=table)
    row = table.instants.get(requested_time=SMALL_COMMIT)
    assert WriteStatsIndex.objects.get(table=table, requested_time=SMALL_COMMIT, complete=True).count == row.files == 2
    user = User.objects.create_user("reader")
    user.groups.add(Group.objects.get(name="viewer"))
    api = Client(HTTP_AUTHORIZATION=f"Bearer {services.token_create(actor=user, owner=user, name='t')[1]}")
    path = f"/api/v1/tables/{table.pk}/instants/{row.pk}"
    for query, expected in (({"page": 2, "page_size": 1}, "10/97de74b1"), ({"partition": "30"}, "30/6db57019")):
        with s3_server.recording() as requests:
            body = api.get(path, query).json()["write_stats"]
        assert [s["path"][:11] for s in body["items"]] == [expected]
        commit = f"/{SMALL_COMMIT}.commit"
        reads = [r for r in requests if r["method"] == "GET" and r["url"].split("?")[0].endswith(commit)]
        assert len(reads) == 1, reads


def test_huge_instant_raw_download_is_for_viewers_of_the_table_only(small: tuple[Table, Instant],
                                                                   console_table: Callable[[str], Table]) -> None:
    table, row = small
    url = reverse("console:instant_raw", args=[table.pk, row.pk, "completed"])
    response = client_of("viewer").get(url)
    on_disk = Path(table.path.removeprefix("file:")) / ".hoodie" / f"{SMALL_COMMIT}.commit"
    assert response.status_code == 200 and b"".join(response.streaming_content) == on_disk.read_bytes()  # type: ignore[attr-defined]
    assert client_of(None).get(url).status_code == 404
    assert Client().get(url).status_code == 302
    assert client_of("operator").post(url).status_code == 405
    admin = client_of("admin")
    assert admin.get(reverse("console:instant_raw", args=[table.pk, row.pk, "bogus"])).status_code == 404
    requested = admin.get(reverse("console:instant_raw", args=[table.pk, row.pk, "requested"]))
    assert requested.status_code == 200 and b"".join(requested.streaming_content) == b""  # type: ignore[attr-defined]
    other = console_table("sample_table/cow/v6_nonpartitioned")  # the instant is not one of its own
    assert admin.get(reverse("console:instant_raw", args=[other.pk, row.pk, "completed"])).status_code == 404


def test_huge_instant_avro_commit_pages_its_write_stats(console_table: Callable[[str], Table], settings: Any) -> None:
    """A v8 table's commit metadata is Avro: above the limit its write stats page as a v6 commit's do."""
    table = console_table("sample_table/cow/v8_simplekeygen_nonhivestyle")
    settings.CLEANLINE_INSTANT_INLINE_MAX_BYTES = 100
    row = table.instants.get(requested_time="20250713011315930", action="commit")
    viewer = client_of("viewer")
    url = reverse("console:instant", args=[table.pk, row.pk])
    page = viewer.get(url).content.decode()
    assert "too large to show here" in page and "listed above a page at a time" in page
    assert "20/352d465e" in page and "10/7b0ea4f9" in page
    only = viewer.get(url, {"partition": "10"}).content.decode()
    assert "10/7b0ea4f9" in only and "20/352d465e" not in only


def test_huge_instant_pending_write_pages_without_a_count(settings: Any, table_copy: Callable[[str], Path],
                                                          tmp_path: Path) -> None:
    """An inflight commit above the limit pages its workload profile's stats; the sync's count
    (of completed files) is not given for it."""
    base = table_copy(SOURCE)
    (base / ".hoodie" / f"{SMALL_COMMIT}.commit").unlink()
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    table = services.table_register(path=str(base), user=None)
    services.table_sync(table=table)
    settings.CLEANLINE_INSTANT_INLINE_MAX_BYTES = 100
    row = table.instants.get(requested_time=SMALL_COMMIT)
    assert row.state == "INFLIGHT"
    user = User.objects.create_user("reader")
    user.groups.add(Group.objects.get(name="viewer"))
    api = Client(HTTP_AUTHORIZATION=f"Bearer {services.token_create(actor=user, owner=user, name='t')[1]}")
    body = api.get(f"/api/v1/tables/{table.pk}/instants/{row.pk}").json()
    assert body["contents"][0]["state"] == "INFLIGHT" and body["contents"][0]["too_large"]
    stats = body["write_stats"]
    assert stats["count"] is None and [s["partition"] for s in stats["items"]] == ["30", "10", "10"]
