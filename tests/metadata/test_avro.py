from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import fastavro
import pytest

from timeline.exceptions import CorruptInstantError
from timeline.metadata import avro

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "hudi-rs-tables"
FIXTURE_ZIPS = (
    FIXTURES / "quickstart_trips_table/mor/avro/v8_trips_8i3u1d.zip",
    FIXTURES / "sample_table/mor/avro/v9_nonpartitioned_rollback.zip",
)

BASE = "s3://lake/trips"
FILE_ID = "6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0"
BASE_FILE = f"{FILE_ID}_2-986-2794_20251220210108078.parquet"
LOG_FILE = f".{FILE_ID}_20251220210127080.log.1_0-1072-3078"

INSTANT_INFO = {"commitTime": "20251220210127080", "action": "deltacommit"}
CLEAN_PARTITION = {
    "partitionPath": "city=chennai",
    "policy": "KEEP_LATEST_COMMITS",
    "deletePathPatterns": [BASE_FILE],
    "successDeleteFiles": [BASE_FILE],
    "failedDeleteFiles": [],
    "isPartitionDeleted": False,
}
CLEAN_METADATA = {
    "startCleanTime": "20251221090000000",
    "timeTakenInMillis": 412,
    "totalFilesDeleted": 1,
    "earliestCommitToRetain": "20251220210125441",
    "lastCompletedCommitTimestamp": "20251220210130911",
    "partitionMetadata": {"city=chennai": CLEAN_PARTITION},
    "version": 2,
    "bootstrapPartitionMetadata": {},
    "extraMetadata": {"savepointed_timestamps": ""},
}
CLEANER_PLAN = {
    "earliestInstantToRetain": {
        "timestamp": "20251220210125441", "action": "deltacommit", "state": "COMPLETED"},
    "lastCompletedCommitTimestamp": "20251220210130911",
    "policy": "KEEP_LATEST_COMMITS",
    "filesToBeDeletedPerPartition": {},
    "version": 2,
    "filePathsToBeDeletedPerPartition": {
        "city=chennai": [
            {"filePath": f"{BASE}/city=chennai/{BASE_FILE}", "isBootstrapBaseFile": False},
            {"filePath": f"{BASE}/city=chennai/{LOG_FILE}", "isBootstrapBaseFile": False},
        ],
    },
    "partitionsToBeDeleted": [],
}
SAVEPOINT_METADATA = {
    "savepointedBy": "operator",
    "savepointedAt": 1766221931000,
    "comments": "before backfill",
    "partitionMetadata": {
        "city=chennai": {"partitionPath": "city=chennai", "savepointDataFile": [BASE_FILE]},
    },
    "version": 1,
}
ROLLBACK_REQUEST = {
    "partitionPath": "city=chennai",
    "fileId": FILE_ID,
    "latestBaseInstant": "20251220210108078",
    "filesToBeDeleted": [f"{BASE}/city=chennai/{LOG_FILE}"],
    "logBlocksToBeDeleted": {},
}
ROLLBACK_PLAN = {"instantToRollback": INSTANT_INFO, "RollbackRequests": [ROLLBACK_REQUEST],
                 "version": 1}
ROLLBACK_METADATA = {
    "startRollbackTime": "20251221091500000",
    "timeTakenInMillis": 195,
    "totalFilesDeleted": 1,
    "commitsRollback": ["20251220210127080"],
    "partitionMetadata": {
        "city=chennai": {
            "partitionPath": "city=chennai",
            "successDeleteFiles": [f"{BASE}/city=chennai/{LOG_FILE}"],
            "failedDeleteFiles": [],
            "rollbackLogFiles": {},
            "logFilesFromFailedCommit": {},
        },
    },
    "version": 1,
    "instantsRollback": [INSTANT_INFO],
}
RESTORE_PLAN = {"instantsToRollback": [INSTANT_INFO], "version": 2,
                "savepointToRestoreTimestamp": "20251220210125441"}
RESTORE_METADATA = {
    "startRestoreTime": "20251221092000000",
    "timeTakenInMillis": 801,
    "instantsToRollback": ["20251220210127080"],
    "hoodieRestoreMetadata": {"20251220210127080": [ROLLBACK_METADATA]},
    "version": 1,
    "restoreInstantInfo": [INSTANT_INFO],
}
COMPACTION_STRATEGY = {
    "compactorClassName": "org.apache.hudi.table.action.compact.RunCompactionActionExecutor",
    "strategyParams": {"compactionPlanVersion": "2"},
    "version": 1,
}
COMPACTION_PLAN = {
    "operations": [{
        "baseInstantTime": "20251220210108078",
        "deltaFilePaths": [LOG_FILE],
        "dataFilePath": BASE_FILE,
        "fileId": FILE_ID,
        "partitionPath": "city=chennai",
        "metrics": {"TOTAL_LOG_FILES": 1.0, "TOTAL_IO_MB": 0.5},
        "bootstrapFilePath": None,
    }],
    "extraMetadata": {"_hoodie.spark.sql.writes.prepped": "true"},
    "version": 2,
    "strategy": COMPACTION_STRATEGY,
    "preserveHoodieMetadata": True,
    "missingSchedulePartitions": [],
}
SLICE = {
    "dataFilePath": f"city=chennai/{BASE_FILE}",
    "deltaFilePaths": [],
    "fileId": FILE_ID,
    "partitionPath": "city=chennai",
    "bootstrapFilePath": "",
    "version": 1,
}
CLUSTERING_GROUP = {"slices": [SLICE], "metrics": {"TOTAL_IO_MB": 0.4}, "numOutputFileGroups": 1,
                    "extraMetadata": None, "version": 1}
CLUSTERING_STRATEGY = {
    "strategyClassName":
        "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy",
    "strategyParams": {"hoodie.clustering.plan.strategy.sort.columns": "ts"},
    "version": 1,
}
CLUSTERING_PLAN = {
    "inputGroups": [CLUSTERING_GROUP],
    "strategy": CLUSTERING_STRATEGY,
    "extraMetadata": {},
    "version": 1,
    "preserveHoodieMetadata": True,
    "missingSchedulePartitions": None,
}
REQUESTED_REPLACE = {"operationType": "CLUSTER", "clusteringPlan": CLUSTERING_PLAN,
                     "extraMetadata": {}, "version": 1}
WRITE_STAT = {
    "fileId": FILE_ID,
    "path": f"city=chennai/{LOG_FILE}",
    "prevCommit": "20251220210127080",
    "numWrites": 1,
    "numDeletes": 0,
    "numUpdateWrites": 1,
    "totalWriteBytes": 1078,
    "totalWriteErrors": 0,
    "partitionPath": "city=chennai",
    "totalLogRecords": 0,
    "fileSizeInBytes": 1078,
    "logVersion": 1,
    "logOffset": 0,
    "baseFile": BASE_FILE,
    "logFiles": [LOG_FILE],
    "runtimeStats": {"totalScanTime": 0, "totalCreateTime": 0, "totalUpsertTime": 41},
}
COMMIT_METADATA = {
    "partitionToWriteStats": {"city=chennai": [WRITE_STAT]},
    "compacted": False,
    "extraMetadata": {"schema": '{"type":"record","name":"trips_record","fields":[]}'},
    "version": 1,
    "operationType": "UPSERT",
}
REPLACE_COMMIT_METADATA = {
    **COMMIT_METADATA,
    "operationType": "INSERT_OVERWRITE",
    "partitionToReplaceFileIds": {"city=chennai": [FILE_ID]},
}
INDEX_PARTITION = {"version": 1, "metadataPartitionPath": "secondary_index_rider_idx",
                   "indexUptoInstant": "20251220210108078", "extraMetadata": {}}
COMPACTION_METADATA = {
    "partitionToCompactionWriteStats": {
        "city=chennai": [{"partitionPath": "city=chennai", "totalLogRecords": 2, "totalLogFiles": 1,
                          "totalUpdatedRecordsCompacted": 1, "hoodieWriteStat": WRITE_STAT}],
    },
}
ARCHIVED_ENTRY = {
    "hoodieCleanMetadata": CLEAN_METADATA,
    "commitTime": "20251221090000000",
    "actionType": "clean",
    "version": 1,
    "actionState": "COMPLETED",
    "hoodieCleanerPlan": CLEANER_PLAN,
    "stateTransitionTime": "20251221090001000",
}

ROUND_TRIPS: dict[str, dict[str, Any]] = {
    "HoodieCleanerPlan": CLEANER_PLAN,
    "HoodieCleanPartitionMetadata": CLEAN_PARTITION,
    "HoodieCleanMetadata": CLEAN_METADATA,
    "HoodieSavepointMetadata": SAVEPOINT_METADATA,
    "HoodieInstantInfo": INSTANT_INFO,
    "HoodieRollbackPlan": ROLLBACK_PLAN,
    "HoodieRollbackMetadata": ROLLBACK_METADATA,
    "HoodieRestorePlan": RESTORE_PLAN,
    "HoodieRestoreMetadata": RESTORE_METADATA,
    "HoodieCompactionStrategy": COMPACTION_STRATEGY,
    "HoodieCompactionPlan": COMPACTION_PLAN,
    "HoodieCompactionMetadata": COMPACTION_METADATA,
    "HoodieSliceInfo": SLICE,
    "HoodieClusteringGroup": CLUSTERING_GROUP,
    "HoodieClusteringStrategy": CLUSTERING_STRATEGY,
    "HoodieClusteringPlan": CLUSTERING_PLAN,
    "HoodieRequestedReplaceMetadata": REQUESTED_REPLACE,
    "HoodieCommitMetadata": COMMIT_METADATA,
    "HoodieReplaceCommitMetadata": REPLACE_COMMIT_METADATA,
    "HoodieIndexPartitionInfo": INDEX_PARTITION,
    "HoodieIndexPlan": {"version": 1, "indexPartitionInfos": [INDEX_PARTITION]},
    "HoodieIndexCommitMetadata": {"version": 1, "operationType": "INDEX",
                                  "indexPartitionInfos": [INDEX_PARTITION]},
    "HoodieArchivedMetaEntry": ARCHIVED_ENTRY,
    "HoodieLSMTimelineInstant": {
        "instantTime": "20251220210127080",
        "completionTime": "20251220210127601",
        "action": "deltacommit",
        "metadata": avro.encode("HoodieCommitMetadata", COMMIT_METADATA),
        "plan": None,
        "version": 1,
    },
}


def _assert_contains(actual: Any, expected: Any) -> None:
    """`actual` equals `expected` except that records may hold more (defaulted) fields."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict)
        for key, value in expected.items():
            _assert_contains(actual[key], value)
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected)
        for actual_item, expected_item in zip(actual, expected):
            _assert_contains(actual_item, expected_item)
    else:
        assert actual == expected


@pytest.mark.parametrize("name", sorted(ROUND_TRIPS))
def test_avro_round_trip(name: str) -> None:
    data = avro.encode(name, ROUND_TRIPS[name])

    assert data.startswith(b"Obj\x01")
    assert avro.record_name(data) == f"org.apache.hudi.avro.model.{name}"
    _assert_contains(avro.decode(data, path=f"{name}.avro"), ROUND_TRIPS[name])


def test_avro_encode_header_holds_only_the_schema_like_java() -> None:
    data = avro.encode("HoodieCleanerPlan", CLEANER_PLAN)

    container = fastavro.reader(io.BytesIO(data))
    assert list(container.metadata) == ["avro.schema"]
    embedded = json.loads(container.metadata["avro.schema"])
    assert embedded["name"] == "org.apache.hudi.avro.model.HoodieCleanerPlan"
    assert [block.num_records for block in fastavro.block_reader(io.BytesIO(data))] == [1]


def test_avro_encode_defines_each_named_type_once() -> None:
    data = avro.encode("HoodieArchivedMetaEntry", ARCHIVED_ENTRY)

    schema_json = fastavro.reader(io.BytesIO(data)).metadata["avro.schema"]
    assert schema_json.count('"name":"org.apache.hudi.avro.model.HoodieCommitMetadata"') == 1
    assert '"type":["null","org.apache.hudi.avro.model.HoodieCommitMetadata"]' in schema_json


def test_avro_encode_fills_defaults() -> None:
    plan = avro.decode(avro.encode("HoodieCleanerPlan", {"policy": "KEEP_LATEST_FILE_VERSIONS"}),
                       path="p")

    assert plan == {
        "earliestInstantToRetain": None,
        "lastCompletedCommitTimestamp": "",
        "policy": "KEEP_LATEST_FILE_VERSIONS",
        "filesToBeDeletedPerPartition": None,
        "version": 1,
        "filePathsToBeDeletedPerPartition": None,
        "partitionsToBeDeleted": None,
        "extraMetadata": None,
    }
    restore_plan = avro.decode(avro.encode("HoodieRestorePlan", {}), path="p")
    assert restore_plan == {"instantsToRollback": [], "version": 2,
                            "savepointToRestoreTimestamp": None}


def test_avro_encode_rejects_missing_required_field() -> None:
    with pytest.raises(ValueError, match="policy"):
        avro.encode("HoodieCleanerPlan", {"version": 2})


def test_avro_encode_rejects_unknown_field() -> None:
    with pytest.raises(ValueError, match="RollbackRequest"):
        avro.encode("HoodieRollbackPlan", {"RollbackRequest": []})


def test_avro_schema_unknown_name() -> None:
    with pytest.raises(KeyError, match="HoodieNothing"):
        avro.schema("HoodieNothing")


def _two_records() -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, avro.schema("HoodieInstantInfo"), [INSTANT_INFO, INSTANT_INFO])
    return out.getvalue()


def _bad_sync() -> bytes:
    data = avro.encode("HoodieInstantInfo", INSTANT_INFO)
    return data[:-16] + bytes(16)


@pytest.mark.parametrize("data", [
    pytest.param(b"not avro at all", id="junk"),
    pytest.param(b'{\n  "partitionToWriteStats" : { }\n}', id="json"),
    pytest.param(b"Obj\x01\x02garbage", id="junk-header"),
    pytest.param(avro.encode("HoodieCleanerPlan", CLEANER_PLAN)[:-20], id="truncated-block"),
    pytest.param(avro.encode("HoodieCleanerPlan", CLEANER_PLAN)[:60], id="truncated-header"),
    pytest.param(_bad_sync(), id="bad-sync"),
    pytest.param(_two_records(), id="two-records"),
])
def test_avro_decode_rejects_corrupt_content(data: bytes) -> None:
    path = "s3://lake/trips/.hoodie/timeline/20251221090000000.clean.requested"
    with pytest.raises(CorruptInstantError) as caught:
        avro.decode(data, path=path)

    assert caught.value.path == path
    assert path in str(caught.value)


def test_avro_decode_datum_with_writer_schema_json() -> None:
    writer_schema = {
        "type": "record",
        "name": "trips_record",
        "namespace": "hoodie.trips",
        "fields": [
            {"name": "_hoodie_commit_time", "type": ["null", "string"], "default": None},
            {"name": "uuid", "type": "string"},
            {"name": "fare", "type": "double"},
            {"name": "rider", "type": ["null", {
                "type": "record", "name": "rider", "fields": [{"name": "name", "type": "string"}],
            }], "default": None},
        ],
    }
    row = {"_hoodie_commit_time": "20251220210108078", "uuid": "e96c4396", "fare": 27.7,
           "rider": {"name": "rider-A"}}
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(writer_schema), row)

    assert avro.decode_datum(out.getvalue(), json.dumps(writer_schema)) == row


# Real instant files written by Apache Hudi (v8: Hudi 1.0.x, v9: Hudi 1.1+).

_INSTANT_FILE = re.compile(r"^\d+(?:_\d+)?\.(?P<action>[a-z]+)(?P<state>\.requested)?$")
_RECORD_BY_CONTENT = {
    ("commit", None): "HoodieCommitMetadata",
    ("deltacommit", None): "HoodieCommitMetadata",
    ("replacecommit", None): "HoodieReplaceCommitMetadata",
    ("rollback", None): "HoodieRollbackMetadata",
    ("indexing", None): "HoodieIndexCommitMetadata",
    ("compaction", ".requested"): "HoodieCompactionPlan",
    ("indexing", ".requested"): "HoodieIndexPlan",
    ("rollback", ".requested"): "HoodieRollbackPlan",
}


def _real_instant_files() -> list[Any]:
    """(zip member, expected record name) for each non-empty Avro instant file directly in a
    table's `.hoodie/timeline/`."""
    found = []
    for zip_path in FIXTURE_ZIPS:
        with zipfile.ZipFile(zip_path) as archive:
            for info in archive.infolist():
                member = Path(info.filename)
                match = _INSTANT_FILE.match(member.name)
                if (info.filename.startswith("__MACOSX/") or info.file_size == 0 or not match
                        or member.parent.parts[1:] != (".hoodie", "timeline")):
                    continue
                record = _RECORD_BY_CONTENT.get((match["action"], match["state"]))
                if record:
                    found.append(pytest.param(info.filename, record, id=info.filename))
    return found


REAL_INSTANTS = _real_instant_files()


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hudi-rs-tables")
    for zip_path in FIXTURE_ZIPS:
        with zipfile.ZipFile(zip_path) as archive:
            members = [m for m in archive.namelist() if not m.startswith("__MACOSX/")]
            archive.extractall(root, members=members)
    return root


def _comparable(schema: Any) -> Any:
    """A parsed schema without `doc` strings and Java's `avro.java.string` string annotations."""
    if isinstance(schema, list):
        return [_comparable(branch) for branch in schema]
    if not isinstance(schema, dict):
        return schema
    kept = {key: _comparable(value) for key, value in schema.items()
            if key not in ("doc", "avro.java.string", "__fastavro_parsed", "__named_schemas")}
    return kept["type"] if list(kept) == ["type"] else kept


def _check_real_values(name: str, record: dict[str, Any]) -> None:
    if name in ("HoodieCommitMetadata", "HoodieReplaceCommitMetadata"):
        assert record["operationType"]
        stats = [(partition, stat) for partition, partition_stats
                 in record["partitionToWriteStats"].items() for stat in partition_stats]
        assert stats
        for partition, stat in stats:
            assert stat["partitionPath"] == partition
            assert stat["fileId"] and stat["fileId"] in stat["path"]
            assert stat["path"].startswith(f"{partition}/") or not partition
    elif name == "HoodieRollbackMetadata":
        assert record["commitsRollback"]
        assert [i["commitTime"] for i in record["instantsRollback"]] == record["commitsRollback"]
    elif name == "HoodieRollbackPlan":
        assert record["instantToRollback"]["commitTime"]
        assert record["RollbackRequests"]
    elif name == "HoodieCompactionPlan":
        assert record["version"] == 2
        assert all(op["fileId"] and op["baseInstantTime"] for op in record["operations"])
    elif name in ("HoodieIndexPlan", "HoodieIndexCommitMetadata"):
        assert [(p["metadataPartitionPath"], p["indexUptoInstant"])
                for p in record["indexPartitionInfos"]] == [
            ("secondary_index_rider_idx", "20251220210108078")]
    else:
        pytest.fail(f"no checks for {name}")


@pytest.mark.parametrize(("member", "name"), REAL_INSTANTS)
def test_avro_decode_real_hudi_instant(tables: Path, member: str, name: str) -> None:
    data = (tables / member).read_bytes()

    record = avro.decode(data, path=member)

    assert avro.record_name(data) == f"org.apache.hudi.avro.model.{name}"
    _check_real_values(name, record)


@pytest.mark.parametrize(("member", "name"), REAL_INSTANTS)
def test_avro_schema_matches_real_writer_schema(tables: Path, member: str, name: str) -> None:
    writer_schema = fastavro.reader(io.BytesIO((tables / member).read_bytes())).writer_schema

    assert _comparable(avro.schema(name)) == _comparable(writer_schema)


@pytest.mark.parametrize(("member", "name"), REAL_INSTANTS)
def test_avro_encode_real_record_with_our_schema(tables: Path, member: str, name: str) -> None:
    record = avro.decode((tables / member).read_bytes(), path=member)
    ours = {field["name"] for field in avro.schema(name)["fields"]}
    shared = {key: value for key, value in record.items() if key in ours}

    again = avro.decode(avro.encode(name, shared), path=member)

    assert {key: again[key] for key in shared} == shared


def test_avro_decode_real_rollback_plan_and_metadata(tables: Path) -> None:
    timeline = tables / "v9_nonpartitioned_rollback/.hoodie/timeline"

    plan = avro.decode((timeline / "20260403184259077.rollback.requested").read_bytes(), path="p")
    done = avro.decode((timeline / "20260403184259077_20260403184300219.rollback").read_bytes(),
                       path="m")

    assert plan["instantToRollback"] == {"commitTime": "20260403184242950", "action": "deltacommit"}
    [request] = plan["RollbackRequests"]
    assert request["filesToBeDeleted"][0].endswith("_20260403184242950.parquet")
    assert done["startRollbackTime"] == "20260403184259077"
    assert done["commitsRollback"] == ["20260403184242950"]
    assert done["totalFilesDeleted"] == 1
    assert done["partitionMetadata"][""]["successDeleteFiles"] == request["filesToBeDeleted"]


def test_avro_decode_real_compaction_plan_and_commit(tables: Path) -> None:
    timeline = tables / "v8_trips_8i3u1d/.hoodie/timeline"

    plan = avro.decode((timeline / "20251220210129235.compaction.requested").read_bytes(),
                       path="p")
    commit = avro.decode((timeline / "20251220210129235_20251220210129883.commit").read_bytes(),
                         path="c")

    planned = {op["fileId"]: op for op in plan["operations"]}
    assert planned[FILE_ID]["deltaFilePaths"] == [
        LOG_FILE, f".{FILE_ID}_20251220210128625.log.1_0-1097-3150"]
    assert commit["compacted"] is True and commit["operationType"] == "COMPACT"
    [stat] = commit["partitionToWriteStats"]["city=chennai"]
    assert stat["fileId"] == FILE_ID
    assert stat["prevBaseFile"] == planned[FILE_ID]["dataFilePath"] == BASE_FILE
    assert stat["path"] == f"city=chennai/{FILE_ID}_0-1112-3190_20251220210129235.parquet"
