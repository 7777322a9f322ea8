"""Every ending goes through the lifecycle: no module but `ingestion/lifecycle.py` writes a
terminal status (contracts.lifecycle.TERMINAL_STATUSES) to the ledger, builds an ending's
alert or records an outcome's metrics and lineage, so no ending can skip one of them.

Read from the source (AST): a ledger write (`create_ingest`, `update_ingest`,
`update_ingests`) or a `Changes` that sets `status` must name a status that is not
terminal (RECEIVED, HELD, QUEUED, RUNNING), visibly: a status held in a variable, or a
write whose fields cannot be seen (a dict built elsewhere), counts as a terminal one.
"""

from __future__ import annotations

import ast
from pathlib import Path

from contracts.lifecycle import TERMINAL_STATUSES, Status

REPO = Path(__file__).resolve().parents[2]
# What is not the service's code: the tests (which set up records in any status) and what
# is installed beside it.
SCANNED = ("contracts", "ingestion", "lambdas", "spark_jobs", "infra", "local", "wap", "lakeview")
# The one module that ends ingests, and the ledger that stores what it writes.
EXEMPT = ("ingestion/lifecycle.py", "ingestion/ledger/")
WRITES = frozenset({"create_ingest", "update_ingest", "update_ingests"})
NOT_TERMINAL = frozenset(s.value for s in Status) - {s.value for s in TERMINAL_STATUSES}


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _not_terminal(value: ast.AST) -> bool:
    """Whether a status expression visibly names a status that is not terminal."""
    if isinstance(value, ast.IfExp):
        return _not_terminal(value.body) and _not_terminal(value.orelse)
    if isinstance(value, ast.Constant):
        return value.value in NOT_TERMINAL
    return _name(value) in NOT_TERMINAL


def _returns(sources: list[str]) -> dict[str, list[ast.AST]]:
    """What each function of `sources` returns, by its name (a write's fields may be one's
    result: `ingest.run_fields`)."""
    found: dict[str, list[ast.AST]] = {}
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found.setdefault(node.name, []).extend(
                    sub.value
                    for sub in ast.walk(node)
                    if isinstance(sub, ast.Return) and sub.value is not None
                )
    return found


class _Finder(ast.NodeVisitor):
    """The ledger writes of one module that may set a terminal status (line numbers)."""

    def __init__(self, returns: dict[str, list[ast.AST]]) -> None:
        self.found: list[int] = []
        self._returns = returns
        self._assigned: list[dict[str, list[ast.AST]]] = [{}]

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        # Fields named by a variable are read from its assignments in the function (`x = v`
        # and `x[key] = v`: a mapping of id -> fields filled one by one).
        assigned: dict[str, list[ast.AST]] = {}
        for sub in ast.walk(node):
            if isinstance(sub, ast.Assign):
                for target in sub.targets:
                    if isinstance(target, ast.Subscript):
                        target = target.value
                    if isinstance(target, ast.Name):
                        assigned.setdefault(target.id, []).append(sub.value)
        self._assigned.append(assigned)
        self.generic_visit(node)
        self._assigned.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call) -> None:
        if _name(node.func) in WRITES:
            # The record's id (or a typed record) comes first; the fields follow.
            # `update_ingests(updates)`, `create_ingest(record)`; else an id comes first
            # (`update_ingest(ingest_id, ...)`, `create_ingest(ingest_id, fields)`).
            whole = _name(node.func) == "update_ingests" or (
                _name(node.func) == "create_ingest" and len(node.args) == 1
            )
            args = node.args if whole else node.args[1:]
            values = [*args, *(k.value for k in node.keywords if k.arg is None)]
            if any(k.arg == "status" and not _not_terminal(k.value) for k in node.keywords) or (
                not all(self._no_terminal_status(value) for value in values)
            ):
                self.found.append(node.lineno)
        self.generic_visit(node)

    def _no_terminal_status(self, value: ast.AST, depth: int = 0) -> bool:
        """Whether fields (a dict, a Changes, a record, a mapping of id -> fields, or a
        variable or function that gives one) visibly set no terminal status."""
        if depth > 4:
            return False
        if isinstance(value, ast.Name) and value.id in self._assigned[-1]:
            return all(self._no_terminal_status(v, depth + 1) for v in self._assigned[-1][value.id])
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return True  # a record's id
        if isinstance(value, ast.Dict):
            for key, item in zip(value.keys, value.values, strict=True):
                if not isinstance(key, ast.Constant):  # a `**splat`, or id -> fields
                    if not self._no_terminal_status(item, depth + 1):
                        return False
                elif key.value == "status" and not _not_terminal(item):
                    return False
            return True
        if isinstance(value, ast.DictComp):
            return self._no_terminal_status(value.value, depth + 1)
        if isinstance(value, ast.Call):
            name = _name(value.func)
            if name in ("Changes", "dict", "IngestRecord", "BatchRecord"):
                status = [k.value for k in value.keywords if k.arg == "status"]
                if status:  # then no `**splat` sets it (Python refuses a repeated keyword)
                    return _not_terminal(status[0])
                # A Changes' positional mapping holds what the records do not declare.
                args = [] if name == "Changes" else value.args
                splats = [k.value for k in value.keywords if k.arg is None]
                return all(self._no_terminal_status(v, depth + 1) for v in [*args, *splats])
            if name in ("of", "fromkeys"):  # `Changes.of(fields)`, `dict.fromkeys(ids, fields)`
                return all(self._no_terminal_status(v, depth + 1) for v in value.args[-1:])
            if name in self._returns:
                return all(self._no_terminal_status(v, depth + 1) for v in self._returns[name])
        if isinstance(value, ast.Attribute | ast.Subscript | ast.List | ast.Tuple):
            return not isinstance(value, ast.Subscript)  # a value, not fields (an id list)
        return False  # fields that cannot be seen here: may set any status


def terminal_writes(source: str, returns: dict[str, list[ast.AST]] | None = None) -> list[int]:
    """The lines of `source` that may write a terminal status to the ledger."""
    finder = _Finder(returns if returns is not None else _returns([source]))
    finder.visit(ast.parse(source))
    return sorted(set(finder.found))


def _scanned() -> dict[str, str]:
    """The service's modules (path -> source), the lifecycle's own excepted."""
    return {
        path.relative_to(REPO).as_posix(): path.read_text()
        for top in SCANNED
        for path in sorted((REPO / top).rglob("*.py"))
        if not path.relative_to(REPO).as_posix().startswith(EXEMPT)
    }


def test_only_the_lifecycle_writes_a_terminal_status():
    """Settling is `ingestion.lifecycle`'s: every other module records an ending through
    it (or sets only a status that is not an ending)."""
    sources = _scanned()
    returns = _returns(list(sources.values()))
    bad = [
        f"{path}:{line}"
        for path, source in sources.items()
        for line in terminal_writes(source, returns)
    ]
    assert bad == []


def test_the_rule_sees_a_terminal_status_however_it_is_written():
    source = """
def a(ledger):
    ledger.update_ingest(iid, status=c.REJECTED, error=reason)

def b(ledger, status):
    ledger.update_ingest(iid, status=status)

def c(ledger):
    fields = {"table": t, "status": c.REJECTED if reason else c.RECEIVED}
    ledger.create_ingest(iid, fields)

def d(ledger):
    ledger.update_ingests({m: Changes(status=c.PUBLISHED) for m in members}, only_if_status=s)

def e(ledger, fields):
    ledger.update_ingest(iid, fields)

def f(ledger):
    changes = Changes(status=Status.DISCARDED)
    ledger.update_ingest(iid, changes)

def g(ledger):
    ledger.create_ingest(IngestRecord(ingest_id=iid, status=c.REJECTED))

def h(ledger, status):
    updates = {}
    updates[member] = Changes(status=status)
    ledger.update_ingests(updates, only_if_status=s)
"""
    assert terminal_writes(source) == [3, 6, 10, 13, 16, 20, 23, 28]


def test_the_rule_lets_a_status_that_is_not_an_ending_through():
    source = """
def a(ledger):
    ledger.update_ingest(iid, status=c.QUEUED, only_if_status={c.RECEIVED})
    ledger.update_ingest(iid, staged_at=now)
    ledger.update_ingest(iid, Changes(sweep=None))
    running = Changes(status=c.RUNNING, batch_id=b)
    ledger.update_ingests({m: running for m in members}, only_if_status=s)
    ledger.create_ingest(iid, {"table": t, "status": c.RECEIVED})
    ledger.create_ingest(IngestRecord(ingest_id=iid, status=c.RECEIVED))
    ledger.update_ingest(iid, run_fields(run))
    # The lifecycle's own functions write terminal statuses.
    share(ledger, {m: Changes(status=c.REJECTED) for m in members}, only_if_status=s)

def run_fields(run):
    return Changes(branch=run.branch)
"""
    assert terminal_writes(source) == []


def test_only_the_lifecycle_alerts_an_ending_and_records_its_metrics_and_lineage():
    """Outside it, an alert is only about a table that waits (BLOCKED, not an ending)."""
    bad = []
    for path, source in _scanned().items():
        if path in ("ingestion/alerts.py", "ingestion/lineage/record.py"):
            continue  # where they are defined
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.Call):
                continue
            name = _name(node.func)
            outcome = [k.value for k in node.keywords if k.arg == "outcome"]
            if name == "record_outcome" or (
                name == "alert_event" and not (outcome and _name(outcome[0]) == "BLOCKED")
            ):
                bad.append(f"{path}:{node.lineno}")
    assert bad == []
