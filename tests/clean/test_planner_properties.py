"""The planner against a small model of Hudi's cleaner written here, on timelines Hypothesis
makes: commits, delta commits, replacecommits, savepoints, pending writes, pending compactions
and earlier cleans, on v6 and v8 tables.

Whatever the timeline: nothing a savepoint names, nothing a pending write wrote, nothing of a
file group's latest slice and no slice a pending compaction reads is ever deleted. On
copy-on-write timelines without earlier cleans (so every partition is listed) the files deleted
are exactly the model's: CleanPlanner.getFilesToCleanKeepingLatestCommits and
getFilesToCleanKeepingLatestVersions, getReplacedFilesEligibleToClean, and the earliest commit to
retain of CleanerUtils.getEarliestCommitToRetain with HUDI-5341's pending-instant bound."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import Lake
from timeline import HudiTable
from timeline.clean.config import CleanConfig
from timeline.clean.planner import CleanPlan, plan_clean
from timeline.instant import State
from timeline.storage import MemoryStorage

TIMES = [f"20261101{h:02d}{m:02d}00000" for h in range(1, 3) for m in range(0, 60, 3)]
PARTITIONS = ("city=sf", "city=nyc")
GROUPS = ("fg0", "fg1")  # a file id is its partition's city and one of these: names never repeat
EXAMPLES = settings(max_examples=100, deadline=None)

Key = tuple[str, str]  # (partition, file id)

# One step of a timeline: what happens at the next time and to which file groups (writes are
# the most frequent, so that slices fall behind the retained window before a pending write pins it).
KEYS = frozenset((p, g) for p in PARTITIONS for g in GROUPS)
KINDS = ["write"] * 8 + ["savepoint"] * 2 + ["pending", "replace", "compaction", "clean"]
step = st.tuples(st.sampled_from(KINDS), st.just(KEYS) | st.sets(st.sampled_from(sorted(KEYS)), min_size=1, max_size=2))


@dataclass
class Model:
    """What the test wrote, kept independently of the library: every file's group and slice,
    which writes completed, what savepoints, pending writes and compactions hold."""

    cow: bool
    slices: dict[Key, dict[str, list[str]]] = field(default_factory=dict)  # group -> base instant -> its files
    replaced: dict[Key, str] = field(default_factory=dict)  # group -> completed replacecommit
    completed: list[str] = field(default_factory=list)  # completed writes (commits, delta commits, replaces)
    pending: list[str] = field(default_factory=list)  # pending writes
    pending_files: set[str] = field(default_factory=set)
    savepointed: set[str] = field(default_factory=set)
    compactions: dict[Key, str] = field(default_factory=dict)  # group -> base instant a pending compaction reads
    savepoints: list[str] = field(default_factory=list)  # savepointed commit times
    cleaned: bool = False

    def live(self) -> list[Key]:
        return [k for k in self.slices if k not in self.replaced]

    def latest(self, key: Key) -> str:
        return max(self.slices[key])


def file_id(key: Key) -> str:
    return f"{key[0].removeprefix('city=')}-{key[1]}"


def build(lake: Lake, steps: list[tuple[str, frozenset[Key]]], model: Model) -> None:
    """Write the steps into the lake, one time each, and record them in the model."""
    fresh = 0
    for time, (kind, keys) in zip(TIMES, steps):
        live = [k for k in sorted(keys) if k not in model.replaced]
        if kind == "write":
            written: dict[str, list[str]] = {}
            for key in live:
                partition, group = key[0], file_id(key)
                if model.cow or key not in model.slices or key in model.compactions:
                    name = lake.base_file(partition, group, time)
                    model.slices.setdefault(key, {})[time] = [name]
                else:  # a delta commit appends a log file to the group's latest slice
                    base = model.latest(key)
                    version = len(model.slices[key][base])
                    name = (lake.log_file(partition, group, base, version=version) if lake.version == 6
                            else lake.log_file(partition, group, time))
                    model.slices[key][base].append(name)
                written.setdefault(partition, []).append(name)
            lake.commit(time, written)
            model.completed.append(time)
        elif kind == "pending":
            names = {k: lake.base_file(k[0], file_id(k), time) for k in live}
            model.pending_files |= set(names.values())
            written = {}
            for (partition, _), name in names.items():
                written.setdefault(partition, []).append(name)
            lake.commit(time, written, state=State.INFLIGHT)
            model.pending.append(time)
        elif kind == "replace":
            old = [k for k in live if k in model.slices]
            if not old:
                continue
            partition, group = old[0][0], file_id(old[0])
            fresh += 1
            new = (partition, f"new{fresh}")
            name = lake.base_file(partition, file_id(new), time)
            lake.commit(time, {partition: [name]}, replaced={partition: [group]}, operation="INSERT_OVERWRITE")
            model.slices[new] = {time: [name]}
            model.replaced[old[0]] = time
            model.completed.append(time)
        elif kind == "savepoint":
            if not model.completed or model.completed[-1] in model.savepoints:
                continue
            held: dict[str, list[str]] = {}
            for key in model.live():
                held.setdefault(key[0], []).extend(model.slices[key][model.latest(key)])
            lake.savepoint(model.completed[-1], held)
            model.savepointed |= {name for names in held.values() for name in names}
            model.savepoints.append(model.completed[-1])
        elif kind == "compaction" and not model.cow:
            ready = [k for k in live if k in model.slices and k not in model.compactions]
            if ready:
                lake.schedule_compaction(time, [(ready[0][0], file_id(ready[0]), model.latest(ready[0]))])
                model.compactions[ready[0]] = model.latest(ready[0])
                model.pending.append(time)
        elif kind == "clean" and model.completed:
            lake.clean(time, model.completed[0])
            model.cleaned = True


def make(version: int, cow: bool, steps: list[tuple[str, frozenset[Key]]]) -> tuple[Lake, Model]:
    lake = Lake(MemoryStorage(), "/t", version=version, table_type="COPY_ON_WRITE" if cow else "MERGE_ON_READ")
    model = Model(cow)
    build(lake, steps, model)
    return lake, model


def planned(lake: Lake, **overrides: object) -> CleanPlan:
    return plan_clean(HudiTable.load(lake.storage, lake.base), CleanConfig().with_overrides(**overrides))


def model_ectr(model: Model, retained: int) -> str | None:
    """CleanerUtils.getEarliestCommitToRetain (KEEP_LATEST_COMMITS): the `retained`-th completed
    write from the end, moved before the earliest pending write if it is later (HUDI-5341)."""
    done = sorted(model.completed)
    if retained == 0 or len(done) <= retained:
        return None
    ectr = done[len(done) - retained]
    first_pending = min(model.pending, default=None)
    if first_pending is not None and first_pending < ectr:
        before = [t for t in done if t < first_pending]
        return before[-1] if before else None
    return ectr


def model_by_commits(model: Model, retained: int) -> set[str]:
    """getFilesToCleanKeepingLatestCommits and getReplacedFilesEligibleToClean on a
    copy-on-write model."""
    ectr = model_ectr(model, retained)
    if ectr is None:
        return set()
    gone: set[str] = set()
    for key, slices in model.slices.items():
        if key in model.replaced:
            if model.replaced[key] < ectr:
                gone |= {n for names in slices.values() for n in names if n not in model.savepointed}
            continue
        times = sorted(slices, reverse=True)
        before = next((t for t in times if t < ectr), None)
        for t in times[1:]:
            if t != before and t < ectr:
                gone |= {n for n in slices[t] if n not in model.savepointed}
    return gone


def model_by_versions(model: Model, retained: int) -> set[str]:
    """getFilesToCleanKeepingLatestVersions and getReplacedFilesEligibleToClean (every
    completed replacement) on a copy-on-write model."""
    gone: set[str] = set()
    for key, slices in model.slices.items():
        if key in model.replaced:
            gone |= {n for names in slices.values() for n in names if n not in model.savepointed}
            continue
        for t in sorted(slices, reverse=True)[retained:]:
            gone |= {n for n in slices[t] if n not in model.savepointed}
    return gone


def assert_nothing_protected_goes(plan: CleanPlan, model: Model) -> None:
    assert all(type(d.delete) is bool and d.reason for d in plan.decisions)  # a decision and its reason, always
    deleted = {d.file_name for d in plan.files_to_delete}
    assert not deleted & model.savepointed, "a savepointed file is deleted"
    assert not deleted & model.pending_files, "a pending write's file is deleted"
    for key in model.live():
        assert not deleted & set(model.slices[key][model.latest(key)]), f"the latest slice of {key} is deleted"
    for key, base in model.compactions.items():
        read = {n for t, names in model.slices[key].items() if t >= base for n in names}
        assert not deleted & read, f"a slice the pending compaction of {key} reads is deleted"


@EXAMPLES
@given(st.sampled_from([6, 8]), st.booleans(), st.lists(step, min_size=1, max_size=14), st.integers(1, 4),
       st.integers(1, 3))
def test_planner_never_deletes_a_savepointed_pending_or_latest_file(
        version: int, cow: bool, steps: list[tuple[str, frozenset[Key]]], commits: int, versions: int) -> None:
    lake, model = make(version, cow, steps)
    assert_nothing_protected_goes(planned(lake, commits_retained=commits), model)
    assert_nothing_protected_goes(planned(lake, policy="KEEP_LATEST_FILE_VERSIONS",
                                          file_versions_retained=versions), model)


cow_step = step.filter(lambda s: s[0] not in ("compaction", "clean"))


@EXAMPLES
@given(st.sampled_from([6, 8]), st.lists(cow_step, min_size=1, max_size=14), st.integers(1, 4))
def test_planner_keep_latest_commits_deletes_what_the_model_deletes(
        version: int, steps: list[tuple[str, frozenset[Key]]], commits: int) -> None:
    lake, model = make(version, True, steps)
    plan = planned(lake, commits_retained=commits)
    ectr = model_ectr(model, commits)
    assert (plan.earliest_instant_to_retain.requested_time if plan.earliest_instant_to_retain else None) == ectr
    assert {d.file_name for d in plan.files_to_delete} == model_by_commits(model, commits)


@EXAMPLES
@given(st.sampled_from([6, 8]), st.lists(cow_step, min_size=1, max_size=14), st.integers(1, 3))
def test_planner_keep_latest_file_versions_deletes_what_the_model_deletes(
        version: int, steps: list[tuple[str, frozenset[Key]]], versions: int) -> None:
    lake, model = make(version, True, steps)
    plan = planned(lake, policy="KEEP_LATEST_FILE_VERSIONS", file_versions_retained=versions)
    assert {d.file_name for d in plan.files_to_delete} == model_by_versions(model, versions)
