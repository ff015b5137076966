"""The mutation check (`make check`): each listed rule broken by a one-line mutation must fail a
test in that rule's own test file. Only rules outside the modules `make mutation` runs mutmut over
(scripts/mutation.py: the modules that decide what is deleted, archived, rolled back or repaired)
are listed here.

The tests run in a copy of the tracked tree in a temporary folder (the checkout is never
written); the fixture tables come from CLEANLINE_FIXTURES (../shared beside the checkout by
default). Each listed test file is first run unmutated: one that fails then proves nothing, and
its mutations are reported ERROR (not killed) without being run. Prints one line per mutation and
exits 1 if a mutation survived (its test file still passed), could not be applied (the line it
names is gone: update the list with the rule) or ended in ERROR.
Arguments, if any, choose the mutations to run: those whose rule or module contains one of them
(`python scripts/mutations.py "clock skew" mdt/reader.py`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutation:
    rule: str
    path: str       # the rule's module
    line: str       # a line that occurs exactly once in it
    mutant: str     # what it becomes
    tests: str      # the rule's own test file


MUTATIONS = [
    Mutation("a heartbeat expires after interval x tolerable misses (HoodieHeartbeatClient)",
             "timeline/failed_writes.py", "    return beat > 0 and now - beat <= interval * misses",
             "    return beat > 0 and now - beat <= interval", "tests/test_failed_writes.py"),
    Mutation("nothing outside the table: containment on whole path segments", "timeline/storage/containment.py",
             '    return path == folder or path.startswith(folder if folder == "/" else folder + "/")',
             "    return path == folder or path.startswith(folder)", "tests/storage/test_containment.py"),
    Mutation("a table whose folder moved since registration is refused", "timeline/table.py",
             "        self._located = self.containment.ensure_located(list(roots))",
             "        return", "tests/storage/test_containment.py"),
    Mutation("the metadata table gets a tombstone for every planned file of a clean", "timeline/mdt/writer.py",
             "            records.append(files_record(identifier, deleted=entry.delete_path_patterns))",
             "            records.append(files_record(identifier, deleted=entry.success_delete_files))",
             "tests/mdt/test_mdt.py"),
    Mutation("a table_lock.json on storage means StorageBasedLockProvider", "timeline/locks/discovery.py",
             "    if table.storage.exists(table.path(STORAGE_LOCK_FILE)):",
             "    if False:", "tests/locks/test_lock_discovery.py"),
    Mutation("no lock known and a writer live: refused unless the writers are stopped", "timeline/transactions.py",
             "        if live and not self.writers_stopped:",
             "        if False:", "tests/locks/test_live_writers.py"),
    Mutation("a storage-based lease must have one renewal interval left before a publish",
             "timeline/locks/storage_based.py",
             "            min_remaining_seconds = self.renew_interval_seconds",
             "            min_remaining_seconds = 0", "tests/locks/test_held_margin.py"),
    Mutation("every write to the metadata table is fenced by its data table's lock", "timeline/mdt/reader.py",
             "        self.mdt.publish_check = self.fence", "        pass", "tests/mdt/test_mdt_fencing.py"),
    Mutation("the metadata table's new times wait out its data table's clock skew", "timeline/mdt/reader.py",
             "        self.mdt.lock_owner = table", "        pass", "tests/mdt/test_mdt_fencing.py"),
    Mutation("new instant times wait out the clock skew under the lock (SkewAdjustingTimeGenerator)",
             "timeline/table.py", "            time.sleep(skew_ms / 1000)", "            pass",
             "tests/locks/test_held_margin.py"),
    Mutation("FileSystemBasedLockProvider is taken as a lock file, not refused", "timeline/locks/__init__.py",
             "    if name in (STORAGE_BASED_LOCK_PROVIDER, FILESYSTEM_BASED_LOCK_PROVIDER):  # a lock file on the "
             "table's store",
             "    if name in (STORAGE_BASED_LOCK_PROVIDER,):", "tests/locks/test_filesystem_lock.py"),
    Mutation("archived state files: every requested and inflight file before any completed file "
             "(deleteArchivedInstants)", "timeline/archive/actions.py",
             "    return transition.delete_states(table, pending) + transition.delete_states(table, completed)",
             "    return transition.delete_states(table, completed) + transition.delete_states(table, pending)",
             "tests/archive/test_actions.py"),
    Mutation("only completed actions are archived", "timeline/archive/actions.py",
             "        if not current.is_completed:", "        if False:", "tests/archive/test_actions.py"),
    Mutation("LSM cleaning keeps 3 snapshots plus one per layer compacted (LSMTimelineWriter.clean)",
             "timeline/archive/lsm.py", "        keep = retained + compacted_layers",
             "        keep = retained", "tests/archive/test_lsm.py"),
    Mutation("no approval within a lineage: who created an account or gave it a role, directly or through "
             "accounts in between, never approves its change, nor the other way round",
             "console/lineage.py", "            if pk != creator:", "            if False:",
             "tests/console/services/test_lineage.py"),
    Mutation("one person's accounts count as one: a verified e-mail address in common", "console/lineage.py",
             "            if address:", "            if False:", "tests/console/services/test_lineage.py"),
    Mutation("break-glass accounts may request but never approve", "console/permissions.py",
             "    if user.get_username() in settings.CLEANLINE_BREAK_GLASS_USERS:", "    if False:",
             "tests/console/services/test_lineage.py"),
    Mutation("a sign-in whose claim or groups map to no role creates no user and gives no access",
             "console/services/signin.py", "    if not role:", "    if False:",
             "tests/console/signin/test_signin_ldap.py"),
    Mutation("the role a provider gives is read again at every sign-in", "console/services/signin.py",
             "    if before == role:", "    if before:", "tests/console/signin/test_signin_ldap.py"),
    Mutation("local sign-in off leaves only the break-glass accounts (passwords, sessions, API tokens)",
             "console/services/signin.py", "    if user.get_username() in settings.CLEANLINE_BREAK_GLASS_USERS:",
             "    if True:", "tests/console/signin/test_signin_local.py"),
    Mutation("a new username holding a character that shows nothing is refused", "console/services/people.py",
             "    if hidden:", "    if False:", "tests/console/services/test_usernames.py"),
    Mutation("failed sign-ins count under one name whatever its case", "console/services/usernames.py",
             '    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", username).casefold())',
             '    folded = unicodedata.normalize("NFKC", username)', "tests/console/services/test_usernames.py"),
    Mutation("an address past the limit of refused API tokens is answered 429 unchecked", "console/api/common.py",
             "        if throttle.locked(request, throttle.API_TOKEN):", "        if False:",
             "tests/console/api/test_api_throttle.py"),
    Mutation("an S3 key that failed every DeleteObjects round is reported deleted only when S3 no longer holds it",
             "timeline/storage/s3.py", "        results.update(self._settle(bucket, pending, reasons))",
             '        results.update((path, "deleted") for path in pending.values())',
             "tests/storage/test_s3_faults.py"),
]


def tracked_copy(into: Path) -> None:
    """The tracked files of the checkout, as they are in the working tree."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        if name.startswith("docs/"):
            continue
        source, target = ROOT / name, into / name
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def pytest(tests: str, tree: Path, env: dict[str, str]) -> int:
    """The exit code of one test file's run in the copy of the tree (stopping at its first
    failure); 124 if it ran past 15 minutes."""
    try:
        return subprocess.run([sys.executable, "-m", "pytest", tests, "-x", "-q", "-p", "no:cacheprovider"],
                              cwd=tree, env=env, capture_output=True, text=True, timeout=900).returncode
    except subprocess.TimeoutExpired:
        return 124


def outcome_of(returncode: int) -> str:
    return "killed" if returncode == 1 else "SURVIVED" if returncode == 0 else f"ERROR ({returncode})"


def run(mutation: Mutation, tree: Path, env: dict[str, str], unmutated: dict[str, int]) -> str:
    """'killed', 'SURVIVED', 'NOT APPLIED' or 'ERROR (...)', restoring the module afterwards. The
    test file is run unmutated first (once per file, remembered in `unmutated`): if it fails
    then, its failing with the mutation would say nothing, and the outcome is ERROR."""
    module = tree / mutation.path
    text = module.read_text()
    if text.count(mutation.line + "\n") != 1:
        return "NOT APPLIED"
    if mutation.tests not in unmutated:
        unmutated[mutation.tests] = pytest(mutation.tests, tree, env)
    if unmutated[mutation.tests] != 0:
        return f"ERROR (fails unmutated: {unmutated[mutation.tests]})"
    module.write_text(text.replace(mutation.line + "\n", mutation.mutant + "\n"))
    try:
        return outcome_of(pytest(mutation.tests, tree, env))
    finally:
        module.write_text(text)


def main(chosen: list[str]) -> int:
    mutations = [m for m in MUTATIONS if not chosen or any(word in m.rule or word in m.path for word in chosen)]
    fixtures = os.environ.get("CLEANLINE_FIXTURES") or str(ROOT.parent / "shared" / "fixtures" / "hudi-rs-tables")
    with tempfile.TemporaryDirectory(prefix="cleanline-mutants-") as folder:
        tree = Path(folder)
        tracked_copy(tree)
        env = {**os.environ, "CLEANLINE_FIXTURES": str(Path(fixtures).resolve()), "PYTHONPATH": str(tree)}
        bad = 0
        unmutated: dict[str, int] = {}
        for mutation in mutations:
            started = time.monotonic()
            outcome = run(mutation, tree, env, unmutated)
            bad += outcome != "killed"
            print(f"{outcome:12} {time.monotonic() - started:5.1f} s  {mutation.path}: {mutation.rule} "
                  f"({mutation.tests})", flush=True)
    print(f"{len(mutations) - bad} of {len(mutations)} mutations killed by their rule's own test file")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
