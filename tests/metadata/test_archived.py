"""The archived timeline's entries (timeline/metadata/archived.py): the v6 HoodieArchivedMetaEntry
of each state file, transcribed from Hudi's `TestMetadataConversionUtils` (each test names the
Java test it follows), and the LSM timeline's manifest as Jackson writes it."""

from __future__ import annotations

import pytest

from timeline.exceptions import CorruptInstantError
from timeline.instant import State
from timeline.metadata import avro, jsonmeta
from timeline.metadata.archived import (
    LsmFileEntry,
    commit_metadata_avro,
    decode_lsm_manifest,
    encode_lsm_manifest,
    meta_entry,
)

T = "20260101000000000"
WHEN = "20260101000001000"


def entry(action: str, state: State, data: bytes) -> dict:
    return meta_entry(time=T, action=action, state=state, transition_time=WHEN, data=data, path=f"<{action}>")


def commit_json(operation: str = "INSERT", *, compacted: bool = False, replaced: dict | None = None) -> bytes:
    stats = {"p1": [{"fileId": "f1", "path": "p1/f1_0-1-0_1.parquet", "prevCommit": "null", "numWrites": 3,
                     "numInserts": 3, "partitionPath": "p1", "fileSizeInBytes": 100, "totalWriteBytes": 100,
                     "runtimeStats": {"totalScanTime": 0, "totalUpsertTime": 0, "totalCreateTime": 5}}]}
    content: dict = {"partitionToWriteStats": stats, "compacted": compacted, "extraMetadata": {"schema": "{}"},
                     "operationType": operation}
    if replaced is not None:
        content["partitionToReplaceFileIds"] = replaced
    return jsonmeta.encode(content)


CLEANER_PLAN = {"earliestInstantToRetain": {"timestamp": "20251231000000000", "action": "commit",
                                            "state": "COMPLETED"},
                "lastCompletedCommitTimestamp": "20251231000000000", "policy": "KEEP_LATEST_COMMITS",
                "filesToBeDeletedPerPartition": {}, "version": 2, "filePathsToBeDeletedPerPartition": {},
                "partitionsToBeDeleted": []}
CLEAN_METADATA = {"startCleanTime": T, "timeTakenInMillis": 4, "totalFilesDeleted": 0,
                  "earliestCommitToRetain": "20251231000000000", "lastCompletedCommitTimestamp": "",
                  "partitionMetadata": {}, "version": 2}
ROLLBACK_METADATA = {"startRollbackTime": T, "timeTakenInMillis": 1, "totalFilesDeleted": 1,
                     "commitsRollback": [T], "partitionMetadata": {"p1": {
                         "partitionPath": "p1", "successDeleteFiles": ["f1"], "failedDeleteFiles": [],
                         "rollbackLogFiles": {}}},
                     "version": 1, "instantsRollback": [{"commitTime": "1", "action": "commit"}]}
COMPACTION_PLAN = {"operations": [], "version": 2}


def test_archived_completed_clean_carries_its_metadata() -> None:
    """testCompletedClean."""
    found = entry("clean", State.COMPLETED, avro.encode("HoodieCleanMetadata", CLEAN_METADATA))
    assert found["actionState"] == "COMPLETED" and found["actionType"] == "clean"
    assert found["hoodieCleanMetadata"]["startCleanTime"] == T
    assert found["stateTransitionTime"] == WHEN and found["commitTime"] == T


def test_archived_pending_clean_carries_its_plan() -> None:
    """testCleanerPlan (an inflight clean holds a copy of the plan)."""
    found = entry("clean", State.INFLIGHT, avro.encode("HoodieCleanerPlan", CLEANER_PLAN))
    assert found["actionState"] == "INFLIGHT"
    assert found["hoodieCleanerPlan"]["version"] == 2
    assert found["hoodieCleanMetadata"] is None


def test_archived_version_one_clean_plan_is_refused() -> None:
    """CleanerUtils.getCleanerPlan migrates a version-1 plan before archiving it; Cleanline refuses."""
    with pytest.raises(CorruptInstantError, match="version 1"):
        entry("clean", State.REQUESTED, avro.encode("HoodieCleanerPlan", {**CLEANER_PLAN, "version": 1}))


def test_archived_completed_replace_is_converted_from_json() -> None:
    """testCompletedReplace."""
    data = commit_json("INSERT_OVERWRITE", replaced={"p1": ["f0"]})
    found = entry("replacecommit", State.COMPLETED, data)
    replace = found["hoodieReplaceCommitMetadata"]
    assert replace["operationType"] == "INSERT_OVERWRITE"
    assert replace["partitionToReplaceFileIds"] == {"p1": ["f0"]}
    assert found["hoodieCommitMetadata"] is None


def test_archived_empty_completed_replace_has_only_its_instant() -> None:
    """testEmptyCompletedReplace: createMetaWrapperForEmptyInstant."""
    found = entry("replacecommit", State.COMPLETED, b"")
    payloads = {k: v for k, v in found.items() if v is not None}
    assert payloads == {"commitTime": T, "actionState": "COMPLETED", "stateTransitionTime": WHEN,
                        "actionType": "replacecommit"}


def test_archived_empty_requested_replace_has_no_plan() -> None:
    """testEmptyRequestedReplace."""
    found = entry("replacecommit", State.REQUESTED, b"")
    assert found["actionState"] == "REQUESTED" and found["hoodieRequestedReplaceMetadata"] is None


def test_archived_empty_inflight_replace_has_no_metadata() -> None:
    """testEmptyInflightReplace."""
    found = entry("replacecommit", State.INFLIGHT, b"")
    assert found["actionState"] == "INFLIGHT" and found["HoodieInflightReplaceMetadata"] is None


def test_archived_inflight_replace_carries_its_workload() -> None:
    """testNonEmptyInflightReplace."""
    found = entry("replacecommit", State.INFLIGHT, commit_json("INSERT_OVERWRITE_TABLE"))
    assert found["HoodieInflightReplaceMetadata"]["operationType"] == "INSERT_OVERWRITE_TABLE"


def test_archived_requested_replace_carries_its_plan() -> None:
    plan = {"operationType": "cluster", "clusteringPlan": None, "extraMetadata": None, "version": 1}
    found = entry("replacecommit", State.REQUESTED, avro.encode("HoodieRequestedReplaceMetadata", plan))
    assert found["hoodieRequestedReplaceMetadata"]["operationType"] == "cluster"


def test_archived_completed_commit_is_converted_from_json() -> None:
    """testCompletedCommit; the write stats keep the Java object's fields."""
    found = entry("commit", State.COMPLETED, commit_json("INSERT"))
    metadata = found["hoodieCommitMetadata"]
    assert metadata["operationType"] == "INSERT"
    assert metadata["version"] is None  # Avro's no-argument constructor sets no default
    (stat,) = metadata["partitionToWriteStats"]["p1"]
    assert (stat["fileId"], stat["path"], stat["prevCommit"], stat["numWrites"]) == (
        "f1", "p1/f1_0-1-0_1.parquet", "null", 3)
    assert stat["numDeletes"] == 0  # a Java long the JSON lacks is 0
    assert stat["minEventTime"] is None  # a Java Long the JSON lacks is null
    assert stat["totalLogFiles"] is None  # an Avro field the Java object has not
    assert stat["runtimeStats"] == {"totalScanTime": 0, "totalCreateTime": 5, "totalUpsertTime": 0}


def test_archived_empty_completed_commit_has_only_its_instant() -> None:
    """testEmptyCompletedCommit."""
    found = entry("commit", State.COMPLETED, b"")
    assert found["hoodieCommitMetadata"] is None and found["actionType"] == "commit"


def test_archived_empty_requested_commit_is_an_empty_commit() -> None:
    """`HoodieCommitMetadata.fromBytes` of an empty file is a new HoodieCommitMetadata."""
    found = entry("commit", State.REQUESTED, b"")
    assert found["hoodieCommitMetadata"] == {"partitionToWriteStats": {}, "compacted": False, "extraMetadata": {},
                                             "version": None, "operationType": "UNKNOWN"}


def test_archived_completed_delta_commit_keeps_its_action() -> None:
    """testCompletedDeltaCommit; the log fields of a delta write stat are not kept (the JSON is
    read into HoodieWriteStat, not HoodieDeltaWriteStat)."""
    content = jsonmeta.decode(commit_json("UPSERT"), path="<json>")
    content["partitionToWriteStats"]["p1"][0].update(logVersion=1, logOffset=0, baseFile="b", logFiles=["l"])
    found = entry("deltacommit", State.COMPLETED, jsonmeta.encode(content))
    assert found["actionType"] == "deltacommit"
    (stat,) = found["hoodieCommitMetadata"]["partitionToWriteStats"]["p1"]
    assert (stat["logVersion"], stat["baseFile"], stat["logFiles"]) == (None, None, None)


def test_archived_completed_rollback_carries_its_metadata() -> None:
    """testCompletedRollback."""
    found = entry("rollback", State.COMPLETED, avro.encode("HoodieRollbackMetadata", ROLLBACK_METADATA))
    assert found["hoodieRollbackMetadata"]["startRollbackTime"] == T
    assert found["hoodieRollbackMetadata"]["partitionMetadata"]["p1"]["successDeleteFiles"] == ["f1"]


def test_archived_empty_completed_rollback_has_only_its_instant() -> None:
    """testEmptyCompletedRollback."""
    found = entry("rollback", State.COMPLETED, b"")
    assert found["hoodieRollbackMetadata"] is None and found["actionType"] == "rollback"


def test_archived_pending_rollback_carries_nothing() -> None:
    plan = avro.encode("HoodieRollbackPlan", {"instantToRollback": {"commitTime": "1", "action": "commit"},
                                              "RollbackRequests": [], "version": 1})
    found = entry("rollback", State.REQUESTED, plan)
    assert {k for k, v in found.items() if v is not None} == {"commitTime", "actionState", "stateTransitionTime",
                                                              "actionType"}


def test_archived_completed_compaction_is_a_compacting_commit() -> None:
    """testCompletedCompaction."""
    found = entry("commit", State.COMPLETED, commit_json("COMPACT", compacted=True))
    assert found["hoodieCommitMetadata"]["operationType"] == "COMPACT"
    assert found["hoodieCommitMetadata"]["compacted"] is True


def test_archived_requested_compaction_carries_its_plan() -> None:
    """testInflightCompaction (the plan is read from the requested file)."""
    found = entry("compaction", State.REQUESTED, avro.encode("HoodieCompactionPlan", COMPACTION_PLAN))
    assert found["actionType"] == "compaction" and found["hoodieCompactionPlan"]["version"] == 2
    assert entry("compaction", State.INFLIGHT, b"")["hoodieCompactionPlan"] is None


def test_archived_requested_log_compaction_carries_its_plan() -> None:
    """testInflightLogCompaction."""
    found = entry("logcompaction", State.REQUESTED, avro.encode("HoodieCompactionPlan", COMPACTION_PLAN))
    assert found["actionType"] == "logcompaction" and found["hoodieCompactionPlan"]["version"] == 2


def test_archived_avro_where_json_is_read_names_the_file() -> None:
    with pytest.raises(CorruptInstantError, match="<commit>"):
        entry("commit", State.COMPLETED, avro.encode("HoodieCommitMetadata", {"operationType": "INSERT"}))


def test_archived_commit_conversion_of_a_bare_commit() -> None:
    """testConvertCommitMetadata."""
    assert commit_metadata_avro({"operationType": "INSERT"})["operationType"] == "INSERT"


def test_archived_lsm_manifest_is_jackson_pretty_printed() -> None:
    files = [LsmFileEntry("1_2_0.parquet", 10), LsmFileEntry("3_4_0.parquet", 20)]
    data = encode_lsm_manifest(files)
    assert data == (b'{\n  "files" : [ {\n    "fileName" : "1_2_0.parquet",\n    "fileLen" : 10\n  }, {\n'
                    b'    "fileName" : "3_4_0.parquet",\n    "fileLen" : 20\n  } ]\n}')
    assert decode_lsm_manifest(data, path="m") == files
    assert encode_lsm_manifest([]) == b'{\n  "files" : [ ]\n}'
    assert decode_lsm_manifest(b"", path="m") == []
    with pytest.raises(CorruptInstantError, match="manifest_3"):
        decode_lsm_manifest(b"{", path="manifest_3")
