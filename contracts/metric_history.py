"""Audit metrics over time (docs/metric-history.md): what every audit records, the
history-bound syntax a check's `min`/`max` may use, and the anomaly band.

Every audit writes the metrics of the rows it judged into the table's metrics table
(`metrics_table_name`), on the ingest's branch: the merge that publishes the data
publishes them too, so main's history is exactly the published drops. A check's bound
may then be an expression over that history (`0.8 * avg(last(10))`), and an `anomaly`
check learns a band (mean ± k·stddev, or median ± k·MAD) from it.

Pure Python and 3.9-compatible: the table config parser validates with it, the Spark job
evaluates with it, and `wap show` explains with the same words.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Union

# The metrics an audit records. Table-level: ROW_COUNT. Per column: the rest (MIN, MAX,
# MEAN, STDDEV for numeric columns only). CHECK: a check's measured value, by check name.
ROW_COUNT = "row_count"
NULL_FRACTION = "null_fraction"
DISTINCT_COUNT = "distinct_count"
MIN, MAX, MEAN, STDDEV = "min", "max", "mean", "stddev"
CHECK = "check"
COLUMN_METRICS = (NULL_FRACTION, DISTINCT_COUNT, MIN, MAX, MEAN, STDDEV)
NUMERIC_METRICS = (MIN, MAX, MEAN, STDDEV)
METRICS = (ROW_COUNT, *COLUMN_METRICS)
# Rows of the metrics table are about the whole run or about one of its source files.
SCOPE_TABLE, SCOPE_FILE = "table", "file"

# The metrics table of `<ns>.<table>` is `<ns>.<table>__audit_metrics`: beside its data
# table, one per table, so the table's own lock serializes its writers (one table for all
# would make every two concurrent ingests conflict at merge).
METRICS_TABLE_SUFFIX = "__audit_metrics"

# The metrics table's columns (name, Spark SQL type, nullable), in order.
METRICS_TABLE_COLUMNS = (
    ("ingest_id", "string", False),
    ("recorded_at", "timestamp", False),
    ("scope", "string", False),
    ("source", "string", True),
    ("column_name", "string", True),
    ("metric", "string", False),
    ("check_name", "string", True),
    ("value", "double", True),
)

# Anomaly checks: defaults, and the methods a band is learned with.
MEAN_STD, MEDIAN_MAD = "mean_std", "median_mad"
BAND_METHODS = (MEAN_STD, MEDIAN_MAD)
DEFAULT_SENSITIVITY = 3.0
DEFAULT_WINDOW = 10
DEFAULT_MIN_HISTORY = 4
MAX_WINDOW = 1000
DAY_OF_WEEK = "day_of_week"
SEASONALITIES = (DAY_OF_WEEK,)
# The band is never narrower than this share of the centre on either side: a metric that
# was identical in every published drop (10,000 rows each) still tolerates some noise.
DEFAULT_MIN_SPREAD = 0.01
# MAD of a normal distribution is 0.6745 stddev: scaled, k means the same as for mean ± k·stddev.
MAD_TO_SIGMA = 1.4826


def metrics_table_name(table: str) -> str:
    """`<ns>.<table>__audit_metrics`: where the audits of `<ns>.<table>` record metrics."""
    return table + METRICS_TABLE_SUFFIX


def is_metrics_table(table: str) -> bool:
    """Whether `table` (`<ns>.<name>` or a bare name) is a metrics table."""
    return table.endswith(METRICS_TABLE_SUFFIX)


class HistoryError(ValueError):
    """A history bound that does not parse (the message says where)."""


# -- history bounds: `0.8 * avg(last(10))`, `max(last(30)) * 1.5`, `avg(last(7)) - 100` --

AGGREGATES: dict[str, Callable[[Sequence[float]], float]] = {
    "avg": statistics.fmean,
    "min": min,
    "max": max,
    "median": statistics.median,
    "stddev": lambda values: statistics.stdev(values) if len(values) > 1 else 0.0,
}
_TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+)|([A-Za-z_]+)|(.))")


@dataclass(frozen=True)
class _Number:
    value: float


@dataclass(frozen=True)
class _Aggregate:
    function: str
    window: int


@dataclass(frozen=True)
class _Binary:
    operator: str
    left: _Node
    right: _Node


_Node = Union[_Number, _Aggregate, _Binary]  # noqa: UP007 (a runtime alias on 3.9)


@dataclass(frozen=True)
class HistoryBound:
    """A bound computed from the published history of one metric, e.g.
    `0.8 * avg(last(10))`: numbers, + - * /, parentheses, and `<agg>(last(<n>))` with
    agg one of avg, min, max, median, stddev."""

    text: str
    tree: Any

    @property
    def window(self) -> int:
        """How many of the latest published drops the bound reads (its largest `last`)."""
        return _largest_window(self.tree)

    def evaluate(self, history: Sequence[float]) -> float | None:
        """The bound on `history` (latest last); None when there is no history yet."""
        if not history:
            return None
        return _evaluate(self.tree, list(history))


def parse_history_bound(text: str) -> HistoryBound:
    """Parse a history bound; HistoryError saying what is wrong where."""
    tokens = _tokens(text)
    parser = _Parser(tokens, text)
    tree = parser.expression()
    if parser.position != len(tokens):
        raise HistoryError(f"{text!r}: unexpected {tokens[parser.position][1]!r}")
    if _largest_window(tree) == 0:
        raise HistoryError(f"{text!r}: no `<agg>(last(<n>))` in it: write a plain number instead")
    return HistoryBound(text, tree)


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens = []
    position = 0
    text = text.rstrip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        number, name, other = match.groups()
        if number is not None:
            tokens.append(("number", number))
        elif name is not None:
            tokens.append(("name", name.lower()))
        elif other in "+-*/()":
            tokens.append(("op", other))
        else:
            raise HistoryError(f"{text!r}: unexpected character {other!r}")
        position = match.end()
    if not tokens:
        raise HistoryError("an empty history bound")
    return tokens


class _Parser:
    """expression := term (('+'|'-') term)*; term := factor (('*'|'/') factor)*;
    factor := number | '-' factor | '(' expression ')' | agg '(' 'last' '(' int ')' ')'."""

    def __init__(self, tokens: list[tuple[str, str]], text: str):
        self.tokens, self.text, self.position = tokens, text, 0

    def _peek(self) -> tuple[str, str] | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def _take(self, kind: str, value: str | None = None) -> str:
        token = self._peek()
        if token is None or token[0] != kind or (value is not None and token[1] != value):
            found = "the end" if token is None else repr(token[1])
            raise HistoryError(f"{self.text!r}: expected {value or kind}, found {found}")
        self.position += 1
        return token[1]

    def expression(self) -> _Node:
        node = self.term()
        while self._peek() in (("op", "+"), ("op", "-")):
            node = _Binary(self._take("op"), node, self.term())
        return node

    def term(self) -> _Node:
        node = self.factor()
        while self._peek() in (("op", "*"), ("op", "/")):
            node = _Binary(self._take("op"), node, self.factor())
        return node

    def factor(self) -> _Node:
        token = self._peek()
        if token is None:
            raise HistoryError(f"{self.text!r}: ends too early")
        if token == ("op", "-"):
            self._take("op")
            return _Binary("-", _Number(0.0), self.factor())
        if token == ("op", "("):
            self._take("op")
            node = self.expression()
            self._take("op", ")")
            return node
        if token[0] == "number":
            return _Number(float(self._take("number")))
        name = self._take("name")
        if name not in AGGREGATES:
            raise HistoryError(
                f"{self.text!r}: unknown function {name!r}; known: {', '.join(AGGREGATES)}"
            )
        self._take("op", "(")
        self._take("name", "last")
        self._take("op", "(")
        size = self._take("number")
        if not size.isdigit() or not 1 <= int(size) <= MAX_WINDOW:
            raise HistoryError(f"{self.text!r}: last(n) takes a whole n from 1 to {MAX_WINDOW}")
        self._take("op", ")")
        self._take("op", ")")
        return _Aggregate(name, int(size))


def _largest_window(node: _Node) -> int:
    if isinstance(node, _Aggregate):
        return node.window
    if isinstance(node, _Binary):
        return max(_largest_window(node.left), _largest_window(node.right))
    return 0


def _evaluate(node: _Node, history: list[float]) -> float:
    if isinstance(node, _Number):
        return node.value
    if isinstance(node, _Aggregate):
        return float(AGGREGATES[node.function](history[-node.window :]))
    left, right = _evaluate(node.left, history), _evaluate(node.right, history)
    if node.operator == "+":
        return left + right
    if node.operator == "-":
        return left - right
    if node.operator == "*":
        return left * right
    return left / right if right else math.inf if left > 0 else -math.inf if left < 0 else 0.0


# -- anomaly bands --


@dataclass(frozen=True)
class Band:
    """The range a metric is expected in, learned from `size` published values."""

    low: float
    high: float
    centre: float
    size: int
    method: str

    def holds(self, value: float) -> bool:
        return self.low <= value <= self.high


def learn_band(
    history: Sequence[float],
    sensitivity: float = DEFAULT_SENSITIVITY,
    method: str = MEAN_STD,
    min_spread: float = DEFAULT_MIN_SPREAD,
) -> Band:
    """The band of `history` (at least one value): centre ± sensitivity · spread, where
    the centre and spread are mean and stddev (MEAN_STD, Deequ's and Elementary's rule) or
    median and 1.4826 · MAD (MEDIAN_MAD: one past outlier barely moves it). The spread is
    at least `min_spread` of |centre|."""
    values = [float(value) for value in history]
    if method == MEDIAN_MAD:
        centre = statistics.median(values)
        spread = MAD_TO_SIGMA * statistics.median(abs(value - centre) for value in values)
    else:
        centre = statistics.fmean(values)
        spread = statistics.stdev(values) if len(values) > 1 else 0.0
    spread = max(spread, min_spread * abs(centre))
    return Band(
        low=centre - sensitivity * spread,
        high=centre + sensitivity * spread,
        centre=centre,
        size=len(values),
        method=method,
    )


# A seasonal check looks this many times further back, then keeps its weekday's drops.
WEEK = 7
# The key of a check result's `threshold` under which its history bounds are explained
# (what each bound was and from how many drops).
HISTORY_KEY = "history"


def is_history_text(value: Any) -> bool:
    """Whether a configured bound is a history expression: text with `last(` in it (a
    string without is a literal, e.g. a date or a string column's bound)."""
    return isinstance(value, str) and "last(" in "".join(value.lower().split())


@dataclass(frozen=True)
class Learned:
    """What an anomaly check's params learn from the published points before a drop:
    the band, or None with how many drops there were (`drops`) and how many it needs."""

    band: Band | None
    drops: int
    needed: int
    seasonal: bool

    @property
    def source(self) -> str:
        """Where the band came from, as explanations say it (`metric_bounds` gives a
        metric check's): `the last 10 published drops on the same weekday`."""
        return history_text(self.drops, self.seasonal)


def configured_bound(params: dict, key: str) -> Any:
    """A check's `min`/`max` as configured: a HistoryBound when written as a history
    expression, else the value (None when not set)."""
    value = params.get(key)
    return parse_history_bound(value) if is_history_text(value) else value


def as_number(value: Any) -> float | None:
    """A check result's `observed` or bound as one number (a freshness check's
    `{"age_s": ...}` unwrapped), None when it is not one (a date, a list of values)."""
    if isinstance(value, (bool, int, float)):
        return float(value)
    if isinstance(value, dict) and len(value) == 1:
        return as_number(next(iter(value.values())))
    return None


def learn_anomaly_band(params: dict, points: Sequence[tuple[Any, float]], at: Any) -> Learned:
    """The band an `anomaly` check (its `params`) judges a drop at `at` against, from the
    published `(recorded_at, value)` points before it (oldest first): the last `window`
    of them (same weekday only with `seasonality: day_of_week`)."""
    window = int(params.get("window", DEFAULT_WINDOW))
    seasonal = params.get("seasonality") == DAY_OF_WEEK
    if seasonal:
        points = [p for p in points[-window * WEEK :] if p[0].weekday() == at.weekday()]
    values = [p[1] for p in points][-window:]
    needed = int(params.get("min_history", DEFAULT_MIN_HISTORY))
    if not values or len(values) < needed:
        return Learned(None, len(values), needed, seasonal)
    band = learn_band(
        values,
        float(params.get("sensitivity", DEFAULT_SENSITIVITY)),
        params.get("method", MEAN_STD),
        float(params.get("min_spread", DEFAULT_MIN_SPREAD)),
    )
    return Learned(band, len(values), needed, seasonal)


def metric_bounds(params: dict, values: Sequence[float]) -> tuple[Any, Any, str]:
    """A `metric` check's (min, max, where they came from) on the published `values`
    (oldest first): fixed numbers as configured, history bounds evaluated (None without
    history)."""
    bounds, sizes = [], []
    for key in ("min", "max"):
        bound = configured_bound(params, key)
        if isinstance(bound, HistoryBound):
            sizes.append(min(len(values), bound.window))
            bound = bound.evaluate(values)
        bounds.append(bound)
    return bounds[0], bounds[1], history_text(max(sizes)) if sizes else "the config"


def metric_label(metric: str, column: str | None) -> str:
    """`row_count`, `null_fraction(email)`: how a metric is named in explanations."""
    return f"{metric}({column})" if column else metric


def number_text(value: float | None) -> str:
    """A measured or expected value as people read it: 9,600; 0.0125; 3.5."""
    if value is None:
        return "none"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    if float(value).is_integer() and abs(value) >= 1:
        return f"{int(value):,}"
    if abs(value) >= 100:
        return f"{value:,.1f}"
    return f"{value:.4g}"


def history_text(size: int, seasonal: bool = False) -> str:
    """Where an expectation came from: `the last 10 published drops`."""
    drops = "published drop" if size == 1 else f"{size} published drops"
    last = "the last published drop" if size == 1 else f"the last {drops}"
    return last + (" on the same weekday" if seasonal else "")


def expectation_text(
    label: str, value: float | None, low: float | None, high: float | None, source: str
) -> str:
    """`row_count 512; expected 9,600 to 10,400 from the last 10 published drops`."""
    return f"{label} {number_text(value)}; expected {range_text(low, high)} from {source}"


def range_text(low: float | None, high: float | None) -> str:
    """`9,600 to 10,400`, `at least 9,600`, `at most 10,400`."""
    if low is not None and high is not None:
        return f"{number_text(low)} to {number_text(high)}"
    if low is not None:
        return f"at least {number_text(low)}"
    return f"at most {number_text(high)}"
