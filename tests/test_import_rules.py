"""The house plan, enforced: which packages may import which, and no cycles.

- What is deployed (`lambdas/`, `spark_jobs/`, `infra/`) never imports the local stand-ins
  (`local/`), the tools (`wap/`), the lake reader (`lakeview/`), `tests/` or `bench/`.
- The local stand-ins (`local/`) never import the tools (`wap/`) that drive them; what both
  need to read the lake's Iceberg tables lives below both, in `lakeview/`, which imports
  neither.
- `contracts/` (bundled into every Lambda and the job's zip) imports nothing of ours but
  itself, and only the standard library: the job runs it on EMR with nothing but pyspark.
- Nothing but `tests/` imports `tests/`; the tests are laid out like the code, and share
  helpers through `tests/fixtures/`, never through a conftest.
- No import cycles between packages (`wap.cli`, `local.aws`, `ingestion`, ...; a
  top-level module such as `local/spark.py` counts as a package of its own), nor between
  modules, counting the imports inside functions too (a deferred import hides a cycle, it
  does not break it).
"""

from __future__ import annotations

import ast
import functools
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIRST_PARTY = (
    "contracts",
    "ingestion",
    "infra",
    "lambdas",
    "spark_jobs",
    "lakeview",
    "local",
    "wap",
    "tests",
    "bench",
)
DEPLOYED = ("contracts", "ingestion", "lambdas", "spark_jobs", "infra")


# Parsed once per test process: a dozen rules read the same graph (read-only).
@functools.cache
def _imports() -> dict[str, set[tuple[str, str]]]:
    """Package -> {(imported module, file that imports it)} over every first-party file."""
    found: dict[str, set[tuple[str, str]]] = {}
    for top in FIRST_PARTY:
        for path in (REPO / top).rglob("*.py"):
            module = ".".join(path.relative_to(REPO).with_suffix("").parts)
            package = _package(module.removesuffix(".__init__"))
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [node.module]
                for name in names:
                    if name.split(".")[0] in FIRST_PARTY:
                        found.setdefault(package, set()).add((name, str(path.relative_to(REPO))))
    return found


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


@pytest.mark.parametrize("deployed", DEPLOYED)
def test_what_is_deployed_imports_no_local_tool_or_test_code(deployed):
    bad = sorted(
        (f, name)
        for package, imports in _imports().items()
        if package.split(".")[0] == deployed
        for name, f in imports
        if name.split(".")[0] in ("lakeview", "local", "wap", "tests", "bench")
    )
    assert bad == []


def test_the_stand_ins_import_nothing_of_the_tools():
    """`local/` holds only the stand-ins (AWS, EMR, Nessie and its UI, Slack, Spark); the tools
    in `wap/` drive them, never the reverse."""
    bad = sorted(
        (f, name)
        for package, imports in _imports().items()
        if package.split(".")[0] == "local"
        for name, f in imports
        if name.split(".")[0] == "wap"
    )
    assert bad == []


def test_the_lake_reader_imports_neither_the_stand_ins_nor_the_tools():
    """`lakeview/` sits below both the catalog UI (`local/nessie/ui/`) and the tools (`wap/`),
    which read Iceberg tables through it."""
    bad = sorted(
        (f, name)
        for package, imports in _imports().items()
        if package.split(".")[0] == "lakeview"
        for name, f in imports
        if name.split(".")[0] in ("local", "wap")
    )
    assert bad == []


def test_a_lambda_imports_only_its_own_package_and_the_domain():
    """What keeps each Lambda's bundle to its package, the domain (`ingestion`) and the
    contracts (infra/bundling.py)."""
    from infra.bundling import LAMBDA_PACKAGES

    bad = []
    for package, imports in _imports().items():
        if package.split(".")[0] != "lambdas" or package == "lambdas":
            continue
        allowed = {package, "lambdas"}
        bad += sorted(
            (f, name)
            for name, f in imports
            if (name.split(".")[0] == "lambdas" and _package(name) not in allowed)
            or (name.split(".")[0] not in ("lambdas", *LAMBDA_PACKAGES))
        )
    assert bad == []


def test_the_domain_imports_only_itself_and_the_contracts():
    """`ingestion/` (ledger, lifecycle, layout, publishing, batching) sits below the handlers,
    the tools and the stack: it never reaches up into a Lambda, `wap/` or `infra/`."""
    bad = sorted(
        (f, name)
        for package, imports in _imports().items()
        if package.split(".")[0] == "ingestion"
        for name, f in imports
        if name.split(".")[0] not in ("ingestion", "contracts")
    )
    assert bad == []


def test_only_the_lambdas_and_their_tests_import_a_lambdas_module():
    """The tools (`wap/`), the stack (`infra/`), the stand-ins and the benchmarks use the
    domain (`ingestion/`), never a handler's package: what a handler holds is only its own."""
    bad = sorted(
        (f, name)
        for package, imports in _imports().items()
        if package.split(".")[0] not in ("lambdas", "tests")
        for name, f in imports
        if name.split(".")[0] == "lambdas"
    )
    assert bad == []


def test_the_contracts_import_only_themselves_and_the_standard_library():
    """The job imports them on EMR Serverless, where only the standard library and pyspark
    exist (and `contracts` must not drag the job's or a Lambda's code into the other)."""
    import sys

    bad = []
    for path in (REPO / "contracts").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            bad += [
                (str(path.relative_to(REPO)), name)
                for name in names
                if name.split(".")[0] != "contracts"
                and name.split(".")[0] not in sys.stdlib_module_names
            ]
    assert bad == []


def test_the_contracts_run_on_the_jobs_python():
    """EMR Serverless images run Python 3.9: no `match`, no runtime `X | Y` unions."""
    for path in (REPO / "contracts").rglob("*.py"):
        text = path.read_text()
        ast.parse(text, str(path), feature_version=(3, 9))  # refuses `match` and newer syntax
        if path.name != "__init__.py":  # annotations stay strings: `str | None` is fine
            assert "from __future__ import annotations" in text, path


def _python39() -> str | None:
    """A working Python 3.9 (EMR Serverless' job interpreter), if this machine has one."""
    import glob
    import os

    for candidate in (
        shutil.which("python3.9"),
        *sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.9*/bin/python3.9"))),
    ):
        if (
            candidate
            and subprocess.run(
                [candidate, "-c", "pass"], capture_output=True, check=False
            ).returncode
            == 0
        ):
            return candidate
    return None


def test_the_contracts_import_and_parse_on_python_3_9(tmp_path):
    python = _python39()
    if python is None:
        pytest.skip("no Python 3.9 on this machine")
    code = (
        "import contracts.report, contracts.state, contracts.alert, contracts.doc; "
        "contracts.report.AuditReport.from_dict({'report_version': 1, 'ingest_id': 'i', "
        "'table': 'a.b', 'branch': 'b', 'outcome': 'passed'}); import contracts.table_config; "
        "contracts.table_config.parse_table_config({'checks': [{'kind': 'not_null', "
        "'column': 'a'}], 'batch': {'max_files': 2}, 'partition_by': ['day(ts)']})"
    )
    # -I: nothing from the environment; only the repository's contracts on the path.
    result = subprocess.run(
        [python, "-I", "-c", f"import sys; sys.path.insert(0, {str(REPO)!r}); {code}"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_nothing_but_the_tests_imports_the_tests():
    bad = sorted(
        (f, name)
        for package, imports in _imports().items()
        if package.split(".")[0] != "tests"
        for name, f in imports
        if name.split(".")[0] == "tests"
    )
    assert bad == []


def test_no_import_cycles_between_packages():
    graph: dict[str, set[str]] = {}
    for package, imports in _imports().items():
        if package.split(".")[0] in ("tests", "bench"):
            continue
        for name, _ in imports:
            target = _package(name)
            if target != package and target.split(".")[0] not in ("tests", "bench"):
                graph.setdefault(package, set()).add(target)
    cycles = {tuple(sorted(cycle)) for cycle in _cycles(graph)}
    assert cycles == set(), cycles


@functools.cache
def _module_imports() -> dict[str, set[str]]:
    """Module -> the first-party modules it imports anywhere in its file (inside functions
    too; relative imports resolved; `from p import m` names the module p.m when there is
    one). A module importing its own package (`from wap.cli import render` in wap.cli.app)
    is no edge: the package's `__init__` runs first, whoever imports what."""
    files = {}
    for top in FIRST_PARTY:
        for path in (REPO / top).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets: list[str] = []
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*up, base] if base else up)
                targets += [base, *(f"{base}.{alias.name}" for alias in node.names)]
        for target in targets:
            while target and target not in files:  # a name imported from a module: the module
                target = target.rpartition(".")[0]
            if target and target != module and not module.startswith(target + "."):
                graph.setdefault(module, set()).add(target)
    return graph


def test_no_import_cycles_between_modules():
    cycles = {tuple(sorted(cycle)) for cycle in _cycles(_module_imports())}
    assert cycles == set(), cycles


def test_the_module_graph_sees_imports_inside_functions_and_relative_ones():
    graph = _module_imports()
    assert "wap.ops.ingests" in graph["wap.ops.lineage"]  # at module level
    assert "wap.dashboard" in graph["wap.cli.commands.serving"]  # inside a function
    assert "wap.cli.render" in graph["wap.cli.command"]  # `from wap.cli import render`
    assert "wap.cli" not in graph["wap.cli.command"]  # its own package: no edge


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one package (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) != []
    assert _cycles({"a": {"b"}, "b": {"c"}}) == []


def test_the_tests_are_laid_out_like_the_code():
    """tests/<path>/ tests the package at <path>/ (tests/fixtures and tests/plugins hold
    what the tests share)."""
    tests = REPO / "tests"
    folders = {path.parent.relative_to(tests) for path in tests.rglob("test_*.py")}
    stray = sorted(
        str(folder) for folder in folders if str(folder) != "." and not (REPO / folder).is_dir()
    )
    assert stray == []


def test_no_module_imports_a_conftest():
    """Shared helpers live in tests/fixtures/ modules; a conftest only declares fixtures."""
    bad = []
    for path in (REPO / "tests").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.ImportFrom)
                and (node.module or "").split(".")[-1] == "conftest"
            ):
                bad.append(str(path.relative_to(REPO)))
    assert bad == []


def test_nothing_outside_infra_loads_the_cdk():
    """Importing a module of constructs (aws_cdk) starts the CDK's Node runtime (jsii): a
    second or more, and on an end-of-life Node a banner on the user's stderr. The local
    stack and the tools read infra's plain modules (`infra.constants`, `infra.bundling`),
    inside functions too, never one that loads the CDK."""
    graph = _module_imports()
    cdk = {
        ".".join(path.relative_to(REPO).with_suffix("").parts)
        for path in (REPO / "infra").rglob("*.py")
        if re.search(r"^\s*(from|import) (aws_cdk|constructs)\b", path.read_text(), re.MULTILINE)
    }
    assert "infra.identity" in cdk  # the scan sees a module of constructs

    def reached(module: str) -> set[str]:
        seen, todo = set(), [module]
        while todo:
            for target in graph.get(todo.pop(), ()):
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        return seen

    outside = [m for m in graph if m.split(".")[0] not in ("infra", "tests", "bench")]
    bad = {module: sorted(reached(module) & cdk) for module in outside}
    assert {module: found for module, found in bad.items() if found} == {}
