"""The architecture of DESIGN.md stays visible: the library knows nothing of the console."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

LIBRARY = Path(__file__).resolve().parents[1] / "timeline"


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_boundaries_library_never_imports_django_celery_or_console() -> None:
    offenders = {str(p): imported_modules(p) & {"django", "celery", "console"} for p in LIBRARY.rglob("*.py")}
    assert {p: m for p, m in offenders.items() if m} == {}


def test_boundaries_pyspark_only_inside_timeline_spark() -> None:
    offenders = [str(p) for p in LIBRARY.rglob("*.py")
                 if "pyspark" in imported_modules(p) and "spark" not in p.relative_to(LIBRARY).parts[:1]]
    assert offenders == []


NOT_FILE_IO = {"urandom", "environ", "getpid", "cpu_count", "sched_getaffinity"}


def file_io_calls(path: Path) -> list[str]:
    """Calls of the `open` builtin and of `os`/`shutil` functions that touch files."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
            found.append(f"open() at line {node.lineno}")
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in ("os", "shutil", "pafs", "fsspec") and node.attr not in NOT_FILE_IO):
            found.append(f"{node.value.id}.{node.attr} at line {node.lineno}")
    return found


def test_boundaries_table_files_are_touched_only_through_storage() -> None:
    storage = LIBRARY / "storage"
    offenders = {str(p.relative_to(LIBRARY)): calls for p in LIBRARY.rglob("*.py")
                 if storage not in p.parents and (calls := file_io_calls(p))}
    assert offenders == {}


CONSOLE = Path(__file__).resolve().parents[1] / "console"


# What a library user reaches beyond the package's one screen of names: each module's own public
# (not underscored) names. Everything else is the library's inside.
PUBLIC_MODULES = {
    "timeline.archive.archiver", "timeline.archive.plan", "timeline.archive.rules", "timeline.archive.settings",
    "timeline.changes",
    "timeline.clean.config", "timeline.clean.executor", "timeline.clean.retention", "timeline.clean.whatif",
    "timeline.discover", "timeline.doctor", "timeline.exceptions", "timeline.fsview", "timeline.instant",
    "timeline.locks.discovery", "timeline.mdt", "timeline.mdt.listing", "timeline.mdt.reader", "timeline.mdt.validate",
    "timeline.mdt.writer", "timeline.metadata.records", "timeline.roots", "timeline.services", "timeline.storage",
    "timeline.versions",
}
# The console's and the CLI's plumbing (the engine, the fork pool, the demo lake, the remote API
# client, the plan store): outside the public surface, with no stability promise. The console and
# the CLI may import from it, and from nothing else outside the public surface.
INTERNAL = "timeline.internal"
# The library modules outside INTERNAL that must import from it, each with why. Any other
# library module importing INTERNAL fails test_boundaries_the_library_keeps_out_of_its_internal_package.
LIBRARY_USES_OF_INTERNAL = {
    ("timeline.clean.planner", "timeline.internal.forks"):
        "the planner lists and plans a local table's folders in forked processes (`fork_map`)",
    ("timeline.maintenance", "timeline.internal.plan_store"):
        "`maintenance().plan_clean_stored` plans into the plan store",
    ("timeline.maintenance", "timeline.internal.plan_store.files"):
        "`maintenance().plan_clean_stored` reads the plan store's S3 settings (`store_settings`)",
    ("timeline.spark.clean", "timeline.internal.plan_store"):
        "the Spark clean job writes its plan into the plan store (PySpark lives only in timeline/spark)",
    ("timeline.spark.clean", "timeline.internal.plan_store.files"):
        "the Spark clean job's tasks write the plan store's parts (PySpark lives only in timeline/spark)",
    ("timeline.spark.demo", "timeline.internal.demo"):
        "the demo lake's Spark writer builds the tables the demo lists (PySpark lives only in timeline/spark)",
}
SURFACE_MAX = 40


def test_boundaries_public_surface_fits_one_screen() -> None:
    """At most 40 names in `timeline/__init__.pyi`: the table and its namespaces, their typed
    results, the errors and the settings; plumbing stays in its module."""
    import timeline

    assert len(set(timeline.__all__)) <= SURFACE_MAX, sorted(timeline.__all__)


def is_internal(module: str) -> bool:
    return module == INTERNAL or module.startswith(f"{INTERNAL}.")


def outside_the_surface(path: Path, text: str | None = None) -> list[str]:
    """The imports of a console or CLI module that reach past the public surface: a name
    `timeline/__init__.pyi` does not list, a module neither public nor in `timeline.internal`, an
    underscored name, or `import timeline.x`."""
    import timeline

    public = set(timeline.__all__)
    found = []
    for node in ast.walk(ast.parse(path.read_text() if text is None else text)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("timeline"):
            names = {a.name for a in node.names}
            where = f"{path.name}:{node.lineno} {node.module}"
            if node.module == "timeline":
                found += [f"{where}.{n}" for n in sorted(names - public)]
            elif not node.module.startswith("timeline.cli"):  # the CLI's own modules
                if node.module not in PUBLIC_MODULES and not is_internal(node.module):
                    found.append(where)
                found += [f"{where}.{n}" for n in sorted(names) if n.startswith("_")]
        elif isinstance(node, ast.Import):
            found += [f"{path.name}:{node.lineno} import {a.name}" for a in node.names
                      if a.name != "timeline" and a.name.startswith("timeline")]
    return found


def test_boundaries_console_and_cli_use_only_the_public_surface() -> None:
    """The console and the CLI import only what `timeline/__init__.pyi` lists, the public names of
    the public modules, and their plumbing from `timeline.internal`."""
    import timeline

    users = [*CONSOLE.rglob("*.py"), *LIBRARY.glob("cli*.py")]
    assert [entry for path in users for entry in outside_the_surface(path)] == []
    # the CLI reaches the package's names as `timeline.<name>` (each loads its module on first use)
    used = {node.attr for path in LIBRARY.glob("cli*.py") for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "timeline"}
    assert used and used <= set(timeline.__all__), used - set(timeline.__all__)


@pytest.mark.parametrize(("planted", "caught"), [
    ("from timeline.internal.plan_store import StoredPlan", False),
    ("from timeline.internal import remote", False),
    ("from timeline.clean.planner import plan_clean", True),  # a library module that is not public
    ("from timeline.internal.engine import _spark_session", True),
    ("from timeline import remote", True),  # the remote client is reached through timeline.internal
    ("import timeline.internal.engine", True),
])
def test_boundaries_a_planted_import_past_the_surface_is_caught(planted: str, caught: bool) -> None:
    """The console's check allows `timeline.internal` and catches any other module outside the
    public surface (a view's text with an import planted, in memory, not on disk)."""
    path = CONSOLE / "views.py"
    assert outside_the_surface(path) == []
    assert bool(outside_the_surface(path, f"{path.read_text()}\n{planted}\n")) is caught


def internal_imports(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(library module, internal module) for each import of `timeline.internal` from outside it
    (the CLI's modules aside: they are its users)."""
    return {(module, other) for module, imported in graph.items() for other in imported
            if is_internal(other) and not is_internal(module) and not module.startswith("timeline.cli")}


def test_boundaries_the_library_keeps_out_of_its_internal_package() -> None:
    """No library module outside `timeline.internal` imports from it (imports inside functions
    counted), but those listed in LIBRARY_USES_OF_INTERNAL with their reason; each listed import
    still exists, so the list cannot outlive its reason."""
    assert internal_imports(import_graph()) == set(LIBRARY_USES_OF_INTERNAL)
    package = ast.parse(library_modules()[INTERNAL].read_text())  # says what it is, and loads nothing
    assert "not part of the library's public surface" in " ".join((ast.get_docstring(package) or "").split())
    assert [n for n in package.body if isinstance(n, (ast.Import, ast.ImportFrom))] == []


def test_boundaries_a_planted_import_of_the_internal_package_is_caught() -> None:
    """An import of `timeline.internal` planted inside a function of a library module is found
    (the module's text replaced in memory, not on disk)."""
    path = library_modules()["timeline.fsview"]
    graph = import_graph({"timeline.fsview": f"{path.read_text()}\n\ndef _planted() -> None:\n"
                                             "    from timeline.internal.engine import engine_for\n"})
    assert ("timeline.fsview", "timeline.internal.engine") in internal_imports(graph)


def test_boundaries_public_surface_is_one_list_and_every_name_resolves() -> None:
    """timeline/__init__.pyi holds the public names (imports for type checkers and lazy_loader,
    and `__all__`): the two agree, and each name loads from its module."""
    import timeline

    stub = ast.parse((LIBRARY / "__init__.pyi").read_text())
    (declared,) = [ast.literal_eval(n.value) for n in stub.body
                   if isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in n.targets)]
    assert sorted(declared) == sorted(timeline.__all__)
    for name in declared:
        assert getattr(timeline, name) is not None, name


def test_boundaries_the_cli_imports_only_what_a_command_runs() -> None:
    """`cleanline fsview` starts without the executor, the console's plan store or pyarrow's
    dataset support loaded: the package's names load their modules on first use."""
    probe = ("import sys, timeline.cli; heavy = ('timeline.clean.executor', 'timeline.maintenance', "
             "'timeline.internal.plan_store', 'pyarrow.dataset', 'timeline.spark', 'timeline.internal.remote'); "
             "print(sorted(m for m in sys.modules if m.startswith(heavy)))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def hudi_field_names() -> set[str]:
    """Every camelCase field name of the Avro records Hudi writes on its timeline."""
    import json

    names: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for field in node.get("fields") or ():
                if isinstance(field, dict) and field.get("name"):
                    names.add(field["name"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for schema in (LIBRARY / "metadata" / "schemas").glob("*.avsc"):
        walk(json.loads(schema.read_text()))
    return {n for n in names if n != n.lower()}


def spelled_hudi_fields(path: Path, fields: set[str]) -> list[str]:
    """String constants naming a Hudi field. In the CLI (cli*.py) the keys of the dicts it prints are its
    own JSON output (which reuses some names), so only reads are flagged there."""
    tree = ast.parse(path.read_text(), filename=str(path))
    output_keys: set[int] = set()
    if path.name.startswith("cli") and path.parent == LIBRARY:
        output_keys = {id(k) for node in ast.walk(tree) if isinstance(node, ast.Dict) for k in node.keys if k}
    return [f"{node.value} at line {node.lineno}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value in fields and id(node) not in output_keys]


def test_boundaries_hudi_field_names_are_spelled_only_in_timeline_metadata() -> None:
    """Instant payloads are read and written through the typed records of
    timeline/metadata/records.py; nothing else spells their field names (log-block formats
    live in timeline/logformat.py)."""
    fields = hudi_field_names()
    assert {"partitionToWriteStats", "successDeleteFiles", "savepointDataFile", "earliestInstantToRetain"} <= fields
    sources = [p for p in [*LIBRARY.rglob("*.py"), *CONSOLE.rglob("*.py")]
               if LIBRARY / "metadata" not in p.parents and p.name != "logformat.py" and "migrations" not in p.parts]
    offenders = {str(p.relative_to(p.parents[1])): found for p in sources if (found := spelled_hudi_fields(p, fields))}
    assert offenders == {}
    templates = {str(p.name): [f for f in fields if f".{f}" in p.read_text()]
                 for p in (CONSOLE / "templates").rglob("*.html")}
    assert {p: f for p, f in templates.items() if f} == {}


def library_modules() -> dict[str, Path]:
    """Module name -> its file, for every module of the library (a package is its __init__.py)."""
    modules: dict[str, Path] = {}
    for path in LIBRARY.rglob("*.py"):
        parts = list(path.relative_to(LIBRARY.parent).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def absolute(package: str, node: ast.ImportFrom) -> str:
    """The module a `from ... import` names, a relative one resolved against its package."""
    if not node.level:
        return node.module or ""
    anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
    return ".".join(anchor + ([node.module] if node.module else []))


def lazy_exports() -> dict[str, dict[str, str]]:
    """Package -> {exported name: the module its `__init__.pyi` imports it from}: what
    `lazy_loader.attach_stub` reads, so that an import of the package's name reaches the
    module that defines it (the package's __init__.py itself imports nothing)."""
    exports: dict[str, dict[str, str]] = {}
    for stub in LIBRARY.rglob("__init__.pyi"):
        package = ".".join(stub.parent.relative_to(LIBRARY.parent).parts)
        exports[package] = {alias.asname or alias.name: absolute(package, node)
                            for node in ast.parse(stub.read_text()).body if isinstance(node, ast.ImportFrom)
                            for alias in node.names}
    return exports


def import_graph(sources: dict[str, str] | None = None) -> dict[str, set[str]]:
    """Module -> the library modules it imports, imports inside functions counted (those under
    `if TYPE_CHECKING:` are not imports at run time). A name a lazily loading package exports
    (`from timeline.storage import storage_for`, `timeline.HudiTable`) counts as an import of the
    module that defines it. `sources` replaces modules' text, to analyse a planted import in memory."""
    modules = library_modules()
    exports = lazy_exports()

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    def defined(base: str, name: str) -> str:
        while name in exports.get(base, {}):
            base = exports[base][name]
        return f"{base}.{name}"

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        text = (sources or {}).get(name) or path.read_text()
        tree = ast.parse(text, filename=str(path))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        typing_only = {id(sub) for node in ast.walk(tree) if isinstance(node, ast.If)
                       and "TYPE_CHECKING" in ast.unparse(node.test) for sub in ast.walk(node)}
        lazy_bound = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                      and id(node) not in typing_only for alias in node.names
                      if alias.asname is None and alias.name in exports}
        for node in ast.walk(tree):
            targets: list[str] = []
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = absolute(package, node)
                targets = [base, *(defined(base, alias.name) for alias in node.names)]
            elif isinstance(node, ast.Attribute) and ast.unparse(node.value) in lazy_bound:
                targets = [defined(ast.unparse(node.value), node.attr)]  # `import timeline` ... `timeline.X`
            for target in targets:
                found = known(target) if target.startswith("timeline") else None
                if found and found != name and found != "timeline":
                    graph[name].add(found)
    return graph


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_boundaries_no_import_circle() -> None:
    """Imports inside functions count, and a name a package exports lazily counts as an import
    of the module defining it: the storage backends are chosen by their registry
    (timeline/storage/registry.py); the engine, the fork pool and the demo stand apart; the
    rule modules take a `Table` and the namespaces hang on the `HudiTable` above them
    (timeline/hudi_table.py); the metadata table's rollback and restore live beside the
    machinery they run (timeline/rollback.py, timeline/restore.py), not in its writer."""
    assert circles(import_graph()) == []


# The library's layers, lowest first. A module imports only from its own layer or one below
# (imports inside functions counted). `pkg.*` is a package and its modules; a module named
# exactly is placed apart from its package. The package `timeline` itself imports nothing at
# run time (lazy_loader), so it has no place here.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("values and errors", ("timeline.exceptions", "timeline.instant", "timeline.properties", "timeline.files",
                           "timeline.perf", "timeline.hfile", "timeline.logformat",
                           "timeline.internal", "timeline.internal.forks")),
    ("storage backends", ("timeline.storage.*",)),
    ("storage registry", ("timeline.storage.registry", "timeline.storage")),
    ("records and settings", ("timeline.metadata.*", "timeline.config")),
    ("table", ("timeline.timeline", "timeline.transition", "timeline.fsview", "timeline.archived_timeline",
               "timeline.locks.*", "timeline.roots", "timeline.transactions", "timeline.table")),
    ("rules", ("timeline.clean.*", "timeline.archive.*", "timeline.mdt.*", "timeline.savepoint", "timeline.rollback",
               "timeline.pending_rollbacks",
               "timeline.restore", "timeline.failed_writes", "timeline.changes", "timeline.discover",
               "timeline.committed", "timeline.doctor.*", "timeline.services.*", "timeline.spark.*",
               "timeline.internal.plan_store.*", "timeline.versions.*")),
    ("namespaces", ("timeline.inspect", "timeline.maintenance")),
    ("the table's front", ("timeline.hudi_table",)),
    ("entry points", ("timeline.internal.engine", "timeline.internal.demo", "timeline.internal.remote",
                      "timeline.spark.demo", "timeline.cli", "timeline.cli_archive", "timeline.cli_automation",
                      "timeline.cli_clean", "timeline.cli_compaction", "timeline.cli_doctor", "timeline.cli_index",
                      "timeline.cli_output", "timeline.cli_version")),
)


def layer_of(module: str) -> int | None:
    """The layer a module is placed in: a module named exactly, else its nearest `pkg.*`."""
    for level, (_, entries) in enumerate(LAYERS):
        if module in entries:
            return level
    package = module
    while package:
        for level, (_, entries) in enumerate(LAYERS):
            if f"{package}.*" in entries:
                return level
        package = package.rpartition(".")[0]
    return None


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each import from a layer above the importing module's."""
    found = []
    for module, imported in sorted(graph.items()):
        for other in sorted(imported):
            low, high = layer_of(module), layer_of(other)
            if low is not None and high is not None and high > low:
                found.append(f"{module} ({LAYERS[low][0]}) imports {other} ({LAYERS[high][0]})")
    return found


def test_boundaries_no_import_runs_up_a_layer() -> None:
    """Every library module has a layer in LAYERS, and every import points down or sideways."""
    graph = import_graph()
    assert [m for m in sorted(graph) if m != "timeline" and layer_of(m) is None] == []
    assert upward_imports(graph) == []


@pytest.mark.parametrize(("module", "planted", "defined_in"), [
    ("timeline.storage.s3", "from timeline.storage import storage_for", "timeline.storage.registry"),
    ("timeline.table", "from timeline import HudiTable", "timeline.hudi_table"),
])
def test_boundaries_a_planted_import_of_a_lazy_name_is_caught(module: str, planted: str, defined_in: str) -> None:
    """An import inside a function of a name a package exports lazily reaches the module that
    defines it, and both checks catch it (the module's text replaced in memory, not on disk)."""
    path = library_modules()[module]
    graph = import_graph({module: f"{path.read_text()}\n\ndef _planted() -> None:\n    {planted}\n"})
    assert defined_in in graph[module]
    assert any({module, defined_in} <= circle for circle in circles(graph))
    assert any(edge.startswith(f"{module} (") and f" imports {defined_in} (" in edge for edge in upward_imports(graph))


def test_boundaries_no_test_module_or_conftest_is_imported() -> None:
    """Tests share helpers through one helpers module per level (tests/helpers.py,
    tests/console/helpers.py, tests/storage/helpers.py, ...) and fixtures through conftest.py,
    used as fixtures: no module under tests/ imports a test module or a conftest."""
    tests = Path(__file__).resolve().parent
    offenders = []
    for path in tests.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            modules = ([a.name for a in node.names] if isinstance(node, ast.Import)
                       else [node.module or "", *(f"{node.module}.{a.name}" for a in node.names)]
                       if isinstance(node, ast.ImportFrom) else [])
            for module in modules:
                last = module.rpartition(".")[2]
                if module.startswith("tests") and (last.startswith("test_") or last == "conftest"):
                    offenders.append(f"{path.relative_to(tests)} imports {module}")
    assert offenders == []


def test_boundaries_tests_keep_helpers_in_one_module_per_level() -> None:
    """Every Python module under tests/ is a test module, that level's helpers.py or its
    conftest.py (data files aside): a helper has one place to be found."""
    tests = Path(__file__).resolve().parent
    strays = [str(path.relative_to(tests)) for path in tests.rglob("*.py")
              if not path.name.startswith("test_") and path.name not in ("helpers.py", "conftest.py")]
    assert strays == []


IGNORE_WITH_REASON = re.compile(r"# type: ignore\[[\w\-, ]+\]  # \S")


def test_boundaries_every_type_ignore_says_why_on_its_line() -> None:
    """A `type: ignore` in the library or the console names its error codes and then its reason,
    on the same line: `# type: ignore[attr-defined]  # read by the login page`."""
    bare = []
    for path in sorted([*LIBRARY.rglob("*.py"), *CONSOLE.rglob("*.py")]):
        with path.open("rb") as source:
            comments = [t for t in tokenize.tokenize(source.readline) if t.type == tokenize.COMMENT]
        bare += [f"{path.relative_to(LIBRARY.parent)}:{t.start[0]}" for t in comments
                 if "type: ignore" in t.string and not IGNORE_WITH_REASON.search(t.string)]
    assert bare == []


MODULE_MAX_LINES, FUNCTION_MAX_LINES = 600, 80


def test_boundaries_modules_and_functions_stay_small() -> None:
    """No module of the library or the console (migrations aside) over 600 lines, no function
    over 80: where one grows past, a concern is split out (the small-surface issue's rule)."""
    too_long = []
    for root in (LIBRARY, CONSOLE):
        for path in sorted(root.rglob("*.py")):
            if "migrations" in path.parts:
                continue
            text = path.read_text()
            lines = len(text.splitlines())
            if lines > MODULE_MAX_LINES:
                too_long.append(f"{path.relative_to(root.parent)}: {lines} lines")
            too_long += [f"{path.relative_to(root.parent)}:{node.lineno} {node.name}: "
                         f"{node.end_lineno - node.lineno + 1} lines" for node in ast.walk(ast.parse(text))
                         if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno
                         and node.end_lineno - node.lineno + 1 > FUNCTION_MAX_LINES]
    assert not too_long, too_long


MUTATING_METHODS = frozenset({"append", "extend", "insert", "pop", "popitem", "clear", "update", "setdefault", "add",
                              "discard", "remove"})
MUTABLE_FACTORIES = frozenset({"dict", "list", "set", "defaultdict", "OrderedDict", "deque", "weakref.WeakSet",
                               "weakref.WeakValueDictionary", "weakref.WeakKeyDictionary"})
# Process state that is not configuration, each with why it may stay: caches keyed by what they
# hold, and the locks an interpreter exit must still expire. A setting is never one of these.
NOT_CONFIGURATION = {
    "timeline/storage/s3.py:_CLIENTS": "boto3 clients, keyed by the settings they were built with",
    "timeline/table.py:_INTACT": "state files that decoded, keyed by URI, size and modification time",
    "timeline/locks/storage_based.py:_LIVE": "held storage-based locks, expired at exit as Hudi's shutdown hook",
}


def module_state(path: Path, text: str | None = None) -> list[str]:
    """`global` statements, and module-level dicts, lists and sets that a function changes
    (a method call that mutates, an item assigned or deleted): state kept in a module."""
    tree = ast.parse(path.read_text() if text is None else text, filename=str(path))
    where = path.relative_to(LIBRARY.parent).as_posix()
    mutable = {}
    for node in tree.body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if value is None or not (isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp,
                                                     ast.SetComp))
                                 or isinstance(value, ast.Call) and ast.unparse(value.func) in MUTABLE_FACTORIES):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        mutable.update({t.id: node.lineno for t in targets if isinstance(t, ast.Name)})
    found = [f"{where}:{node.lineno} global {', '.join(node.names)}" for node in ast.walk(tree)
             if isinstance(node, ast.Global)]
    changed: set[str] = set()
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.attr in MUTATING_METHODS):
                changed.add(node.func.value.id)
            targets = (node.targets if isinstance(node, (ast.Assign, ast.Delete))
                       else [node.target] if isinstance(node, ast.AugAssign) else [])
            changed.update(t.value.id for t in targets
                           if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name))
    found += [f"{where}:{mutable[name]} {name}" for name in sorted(changed & set(mutable))
              if f"{where}:{name}" not in NOT_CONFIGURATION]
    return found


def test_boundaries_no_configuration_is_kept_in_a_library_module() -> None:
    """Configuration is passed (`HudiTable.open(uri, storage_options=..., hudi_options=...,
    roots=...)`), never set in a module: no `global` statement in `timeline/`, and no module-level
    dict, list or set that a function changes, but the caches listed with their reason."""
    found = [entry for path in sorted(LIBRARY.rglob("*.py")) for entry in module_state(path)]
    assert found == []
    assert all(name.split(":")[0] and (LIBRARY.parent / name.split(":")[0]).exists() for name in NOT_CONFIGURATION)


@pytest.mark.parametrize("planted", [
    "_ROOTS: dict[str, str] = {}\n\n\ndef configure(roots: dict[str, str]) -> None:\n    _ROOTS.update(roots)\n",
    "_ROOTS: dict[str, str] = {}\n\n\ndef configure(root: str) -> None:\n    _ROOTS[root] = root\n",
    "_ROOTS = None\n\n\ndef configure(roots: object) -> None:\n    global _ROOTS\n    _ROOTS = roots\n",
])
def test_boundaries_a_planted_module_setting_is_caught(planted: str) -> None:
    """The check finds a registry of settings planted in a library module (in memory, not on disk)."""
    path = LIBRARY / "storage" / "s3.py"
    assert module_state(path, f"{path.read_text()}\n\n{planted}")
    assert module_state(path) == []


def declared_names(module: str) -> list[str] | None:
    """A library module's `__all__` (in its stub, for a lazily loading package), None without one."""
    path = library_modules()[module]
    for source in (path.with_suffix(".pyi"), path):
        if source.exists():
            for node in ast.parse(source.read_text()).body:
                if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
                    return list(ast.literal_eval(node.value))
    return None


def test_boundaries_every_public_module_declares_its_names() -> None:
    """Every public module lists its names in `__all__`, each defined or imported there, and the
    console and the CLI import from a public module only what its `__all__` lists."""
    import importlib

    undeclared = [m for m in sorted(PUBLIC_MODULES) if declared_names(m) is None]
    assert undeclared == []
    for module in sorted(PUBLIC_MODULES):
        loaded = importlib.import_module(module)
        assert [n for n in declared_names(module) or () if not hasattr(loaded, n)] == [], module
    outside = []
    for path in [*CONSOLE.rglob("*.py"), *LIBRARY.glob("cli*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module in PUBLIC_MODULES:
                outside += [f"{path.name}: {node.module}.{a.name}" for a in node.names
                            if a.name not in (declared_names(node.module) or ())]
    assert outside == []


def test_boundaries_test_files_have_unique_names() -> None:
    """The test folders are not packages (rootdir imports): two test files of one name in two
    folders stop the whole suite's collection, which a run of one folder does not show."""
    from collections import Counter

    names = Counter(p.name for p in (LIBRARY.parent / "tests").rglob("test_*.py"))
    assert [n for n, count in names.items() if count > 1] == []
