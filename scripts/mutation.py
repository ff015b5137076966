"""Mutation testing of the rules that decide what is deleted, archived, rolled back or repaired
(`make mutation`): mutmut over each module of `TARGETS`, run against that module's own test files.

Each module gets a copy of the tracked tree in var/mutation/<module>/ (the checkout is never
written) whose pyproject.toml is this one's with `[tool.mutmut]`'s `only_mutate` and
`pytest_add_cli_args_test_selection` set to the module and its test files; mutmut copies it into
./mutants there and runs, for each mutant, the tests of those files that call the mutated
function. Where only some functions of a module decide (the executor's selection, the metadata
table reader's merge), `functions` names them and only their mutants run.

Every mutant that is not killed (survived, no test calls it, suspicious) must be listed in
tests/mutation_equivalents.txt, one line each: `<mutant> | <its mutated line> | <why it is
equivalent>`. A listed line that no longer matches its mutant's mutated line counts as not listed
(the function changed and mutmut renumbered its mutants). Prints killed / equivalent / survived
per module and the run's time; exits 1 if any mutant survived unlisted.
Arguments, if any, choose the modules: those whose path contains one of them
(`python scripts/mutation.py protection mdt/`).
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "var" / "mutation"
EQUIVALENTS = ROOT / "tests" / "mutation_equivalents.txt"
MUTMUT = Path(sys.executable).with_name("mutmut")
KILLED = {1, 3, 36, 24, -24, 152, 255}  # mutmut's killed and timeout exit codes (mutmut/stats.py)


@dataclass(frozen=True)
class Target:
    path: str                      # the module
    tests: tuple[str, ...]         # its own test files
    functions: tuple[str, ...] = ()  # mutmut's names of the functions that decide (all if empty)

    @property
    def module(self) -> str:
        return self.path.removesuffix(".py").replace("/", ".")

    @property
    def key(self) -> str:
        return self.path.removesuffix(".py").replace("/", "-")

    def globs(self) -> list[str]:
        return [f"{self.module}.{name}__mutmut_*" for name in self.functions]


TARGETS = [
    # the planner's forked planning is tested by test_local_processes, its re-validation under the
    # lock (plan_invalidations) through the executor's scheduling
    Target("timeline/clean/planner.py", ("tests/clean/test_planner.py", "tests/clean/test_planner_properties.py",
                                         "tests/internal/plan_store/test_plan_by_partition.py",
                                         "tests/clean/test_planner_metadata_listing.py",
                                         "tests/clean/test_local_processes.py", "tests/clean/test_executor.py")),
    Target("timeline/clean/protection.py", ("tests/clean/test_protection.py", "tests/clean/test_planner.py")),
    Target("timeline/clean/retention.py", ("tests/clean/test_retention.py", "tests/clean/test_enforce_retention.py")),
    # the executor's selection: what it cleans and whether (its deletes are storage mechanics)
    Target("timeline/clean/executor.py", ("tests/clean/test_executor.py",),
           ("x_needs_cleaning", "x_pending_cleans", "x_begin_clean", "x_refuse_protected", "x_plan_targets")),
    Target("timeline/archive/rules.py", ("tests/archive/test_rules.py",
                                         "tests/archive/test_archival_of_metadata_table.py",
                                         "tests/archive/test_archival_properties.py")),
    Target("timeline/archive/retain.py", ("tests/archive/test_rules.py",
                                          "tests/archive/test_archival_of_metadata_table.py")),
    # the plan reads the inputs of the rules (the last clean's plan, pending clusterings): the
    # rules' tests go through it
    Target("timeline/archive/plan.py", ("tests/archive/test_plan.py", "tests/archive/test_rules.py",
                                        "tests/archive/test_archival_of_metadata_table.py",
                                        "tests/archive/test_archival_properties.py")),
    # the orphan rule: what is referenced, the horizon, which files are orphans (the rest is
    # reporting), and the repair's re-check of the planned files on a folder the run holds
    Target("timeline/doctor/orphans.py", ("tests/doctor/test_orphans.py", "tests/doctor/test_orphan_properties.py",
                                          "tests/doctor/test_orphan_repair.py"),
           ("x_referenced", "x_horizon", "x__instant", "x_orphans", "x__rule", "xǁ_Ruleǁverdict",
            "xǁ_Ruleǁold_enough", "x__held")),
    Target("timeline/doctor/stale.py", ("tests/doctor/test_stale.py", "tests/doctor/test_stuck.py")),
    Target("timeline/doctor/stuck.py", ("tests/doctor/test_stuck.py",)),
    Target("timeline/doctor/mdt_drift.py", ("tests/doctor/test_mdt_drift.py",)),
    Target("timeline/doctor/markers.py", ("tests/doctor/test_markers.py",)),
    # the failed writes' rollback in test_failed_writes, the metadata table's in mdt/test_mdt and mdt/test_mdt_v6
    Target("timeline/rollback.py", ("tests/test_rollback.py", "tests/test_rollback_plan.py",
                                    "tests/test_failed_writes.py", "tests/mdt/test_mdt.py",
                                    "tests/mdt/test_mdt_v6.py", "tests/doctor/test_stuck.py")),
    # verify_restore's refusals are in test_hardening, the metadata table's restore in mdt/test_mdt_fencing
    # and, on table version 6 (its sync at a "003" time), in mdt/test_mdt_v6
    Target("timeline/restore.py", ("tests/test_restore.py", "tests/test_hardening.py",
                                   "tests/mdt/test_mdt_fencing.py", "tests/mdt/test_mdt_v6.py")),
    Target("timeline/savepoint.py", ("tests/test_savepoint.py",)),
    # the metadata table reader's merge: which slices and blocks a reader merges, and how
    Target("timeline/mdt/reader.py", ("tests/mdt/test_reader_merge.py", "tests/mdt/test_stream.py",
                                      "tests/mdt/test_mdt.py", "tests/mdt/test_mdt_v6.py"),
           ("xǁMetadataTableǁvalid_instants", "xǁMetadataTableǁ_valid_instants_v6", "xǁMetadataTableǁmerged_slices",
            "xǁMetadataTableǁrecords", "xǁMetadataTableǁ_slice_records", "xǁMetadataTableǁ_blocks")),
    Target("timeline/mdt/stream.py", ("tests/mdt/test_stream.py",)),
    # the definition of a committed file (drift, orphans, mdt validate) and finishing pending rollbacks
    Target("timeline/committed.py", ("tests/test_committed.py",)),
    Target("timeline/pending_rollbacks.py", ("tests/test_pending_rollbacks.py", "tests/doctor/test_stale.py",
                                             "tests/doctor/test_stuck.py")),
]


@dataclass(frozen=True)
class Equivalent:
    mutant: str
    line: str
    why: str


def read_equivalents(path: Path = EQUIVALENTS) -> dict[str, Equivalent]:
    """The checked-in list: `<mutant> | <mutated line> | <why>` per line; # starts a comment."""
    listed: dict[str, Equivalent] = {}
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        parts = raw.split(" | ")
        if len(parts) < 3 or not parts[-1].strip():
            raise SystemExit(f"{path}:{number}: expected '<mutant> | <mutated line> | <why>'")
        listed[parts[0].strip()] = Equivalent(parts[0].strip(), " | ".join(parts[1:-1]).strip(), parts[-1].strip())
    return listed


def tracked_copy(into: Path) -> None:
    """The tracked files of the checkout, as they are in the working tree (docs/ left out)."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        source, target = ROOT / name, into / name
        if not name.startswith("docs/") and source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def toml_value(value: object) -> str:
    """A string, boolean, number or list of strings in TOML (JSON's spelling of them is TOML's)."""
    return json.dumps(value, ensure_ascii=False)


def module_pyproject(target: Target) -> str:
    """This checkout's pyproject.toml with `[tool.mutmut]` (its last table) set for one module."""
    text = (ROOT / "pyproject.toml").read_text()
    head, marker, _ = text.partition("\n[tool.mutmut]\n")
    if not marker:
        raise SystemExit("pyproject.toml has no [tool.mutmut] table")
    settings = dict(tomllib.loads(text)["tool"]["mutmut"])
    settings["only_mutate"] = [target.path]
    settings["pytest_add_cli_args_test_selection"] = list(target.tests)
    # a mutant's tests fastest first (scripts/mutation_order.py): the first failure ends its run
    settings["pytest_add_cli_args"] = [*settings.get("pytest_add_cli_args", []), "-p", "scripts.mutation_order"]
    return head + marker + "".join(f"{key} = {toml_value(value)}\n" for key, value in settings.items())


# Run in a module's copy: the line each mutant (argv[2:]) puts in place, the first '+' line of its
# diff (what `mutmut show` prints), as JSON; one process for all of a module's survivors.
_SHOW = """
import json, sys
from mutmut.mutation.diff_apply import get_diff_for_mutant
def added(mutant):
    diff = get_diff_for_mutant(mutant, path=sys.argv[1])
    lines = [l[1:].strip() for l in diff.splitlines() if l.startswith("+") and not l.startswith("+++")]
    return lines[0] if lines else ""
print(json.dumps({m: added(m) for m in sys.argv[2:]}))
"""


def mutated_lines(work: Path, path: str, mutants: list[str]) -> dict[str, str]:
    """The line each mutant puts in place."""
    if not mutants:
        return {}
    shown = subprocess.run([sys.executable, "-c", _SHOW, path, *mutants], cwd=work, capture_output=True,
                           text=True, check=True).stdout
    return dict(json.loads(shown.strip().splitlines()[-1]))


@dataclass
class Score:
    killed: int = 0
    equivalent: int = 0
    survived: list[str] | None = None
    seconds: float = 0.0
    error: str = ""


def run_target(target: Target, env: dict[str, str], listed: dict[str, Equivalent], children: int) -> Score:
    work = WORK / target.key
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    tracked_copy(work)
    (work / "pyproject.toml").write_text(module_pyproject(target))
    (work / "mutants").mkdir()  # before anything imports with it on the path (see PYTHONPATH below)
    started = time.monotonic()
    log = WORK / f"{target.key}.log"
    # mutmut's copy of the tree on the path from the start: `-p scripts.mutation_order` loads
    # before pytest reads pyproject's pythonpath (mutmut puts ./mutants first on sys.path itself)
    env = {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(work / "mutants"), env.get("PYTHONPATH")]))}
    with log.open("w") as out:
        done = subprocess.run([str(MUTMUT), "run", "--max-children", str(children), *target.globs()],
                              cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT)
    score = Score(survived=[], seconds=time.monotonic() - started)
    meta = work / "mutants" / (target.path + ".meta")
    if done.returncode != 0 or not meta.exists():
        score.error = f"mutmut exited {done.returncode} (see {log.relative_to(ROOT)})"
        return score
    codes: dict[str, int | None] = json.loads(meta.read_text())["exit_code_by_key"]
    globs = target.globs()
    chosen = {m: c for m, c in codes.items() if not globs or any(fnmatch.fnmatchcase(m, g) for g in globs)}
    score.killed = sum(code in KILLED for code in chosen.values())
    alive = sorted(m for m, code in chosen.items() if code not in KILLED)
    lines = mutated_lines(work, target.path, alive)
    for mutant in alive:
        entry = listed.get(mutant)
        if entry is not None and entry.line == lines[mutant]:
            score.equivalent += 1
        else:
            assert score.survived is not None
            score.survived.append(f"{mutant} | {lines[mutant]} | (exit {chosen[mutant]})")
    return score


def main(chosen: list[str]) -> int:
    targets = [t for t in TARGETS if not chosen or any(word in t.path for word in chosen)]
    missing = [test for t in targets for test in t.tests if not (ROOT / test).is_file()]
    if missing:
        raise SystemExit(f"test files missing: {', '.join(missing)}")
    listed = read_equivalents()
    fixtures = os.environ.get("CLEANLINE_FIXTURES") or str(ROOT.parent / "shared" / "fixtures" / "hudi-rs-tables")
    env = {**os.environ, "CLEANLINE_FIXTURES": str(Path(fixtures).resolve())}
    children = int(os.environ.get("MUTATION_CHILDREN") or os.cpu_count() or 2)
    started = time.monotonic()
    print(f"{'module':34} {'killed':>7} {'equivalent':>11} {'survived':>9} {'time':>8}", flush=True)
    bad = 0
    for target in targets:
        score = run_target(target, env, listed, children)
        assert score.survived is not None
        survived = "ERROR" if score.error else str(len(score.survived))
        print(f"{target.path:34} {score.killed:7} {score.equivalent:11} {survived:>9} {score.seconds:7.0f}s",
              flush=True)
        for line in ([score.error] if score.error else []) + score.survived:
            print(f"    {line}", flush=True)
        bad += bool(score.error) + len(score.survived)
    minutes, seconds = divmod(round(time.monotonic() - started), 60)
    print(f"run time {minutes} min {seconds} s; {bad} mutant(s) survived unlisted" + (" or errors" if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
