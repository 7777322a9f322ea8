"""Errors of the WAP job and what decides a failure's outcome (see report.py).

`rejected` is for what the ingest's own input decides (the files, the table config, the
arguments): running it again gives the same answer, so the branch waits for a human.
Everything else, and anything this module does not recognise, is `error`: the state
machine retries it, because an unknown cause must not reject good data for ever.

`classify` decides from typed causes only: Python exception types, and for a JVM failure
the Java cause chain (class hierarchy names and Spark's error classes), root first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from contracts import table_config as _config

INPUT, INFRASTRUCTURE = "input", "infrastructure"
UNKNOWN = "unknown"
MAX_CAUSES = 20
# Spark 3.5's AssertNotNull: a null in a NOT NULL column (the cause and its fixed message).
NOT_NULL_NPE = "java.lang.NullPointerException (AssertNotNull)"
NOT_NULL_MESSAGE = "Null value appeared in non-nullable field"


class WapJobError(Exception):
    """Base error of the WAP job."""

    reason_code = "job_error"
    # True: not the input's fault, the report says `error` and the run is retried.
    infrastructure = False


class TooLargeError(WapJobError, ValueError):
    """A file `read_bytes` refuses to read whole: the content's fault, not the filesystem's."""


class InvalidArgumentError(WapJobError):
    """A job argument (table, branch, ingest id) is malformed."""

    reason_code = "invalid_argument"


class TableConfigError(WapJobError, _config.TableConfigError):
    """The table config does not fit the table (a missing column, a bad regex, a
    partitioning Iceberg refuses, ...): the job's kind of `contracts.table_config`'s
    TableConfigError, which the config parser raises (`as_job_error` makes one of it)."""

    reason_code = _config.CONFIG_ERROR


class InputRejectedError(WapJobError):
    """The source files cannot be read or written into the table."""

    reason_code = "unreadable_input"


class SchemaPolicyError(InputRejectedError):
    """The file's schema differs from the table's in a way the policy forbids."""

    reason_code = "schema_policy"


class InfrastructureError(WapJobError):
    """Something other than the input failed (storage, catalog, cluster); worth a retry."""

    reason_code = "infrastructure_error"
    infrastructure = True


class CatalogError(InfrastructureError):
    """The catalog (Nessie) did not answer as expected."""

    reason_code = "catalog_error"


class ReportWriteError(WapJobError):
    """The report could not be written; the only case where the job exits non-zero."""

    reason_code = "report_write_failed"
    infrastructure = True


# Spark error classes (`SparkThrowable.getErrorClass()`, the part before the first dot).
# Causes of an expression failing on a row: a check's `sql` that is not total (checks.py).
EVALUATION_ERROR_CLASSES = frozenset(
    {
        "CAST_INVALID_INPUT",
        "CAST_OVERFLOW",
        "DIVIDE_BY_ZERO",
        "ARITHMETIC_OVERFLOW",
        "USER_RAISED_EXCEPTION",
        "INVALID_ARRAY_INDEX",
        "INVALID_ARRAY_INDEX_IN_ELEMENT_AT",
    }
)
INPUT_ERROR_CLASSES = frozenset(
    {
        "CANNOT_READ_FILE_FOOTER",  # the footer of a file with valid magic bytes does not decode
        "CANNOT_MERGE_SCHEMAS",  # the source files' schemas conflict (mergeSchema)
        "CANNOT_MERGE_INCOMPATIBLE_DATA_TYPE",
        # Spark 4's null in a NOT NULL column; Spark 3.5 throws a bare NullPointerException
        # instead (see _is_not_null_assertion).
        "NOT_NULL_ASSERT_VIOLATION",
        # What a file holds that Spark cannot take (hints in INPUT_HINTS):
        "INCONSISTENT_BEHAVIOR_CROSS_VERSION",  # dates before 1582 from an unknown writer
        "DECIMAL_PRECISION_EXCEEDS_MAX_PRECISION",  # decimal(40, x): Spark stops at 38
        "COLUMN_ALREADY_EXISTS",  # two columns of one name
        "_LEGACY_ERROR_TEMP_1173",  # Spark 3.5's "Illegal Parquet type" (nanos, time64)
        "PARQUET_TYPE_ILLEGAL",
        "PARQUET_TYPE_NOT_SUPPORTED",
        "PARQUET_TYPE_NOT_RECOGNIZED",
    }
    # An expression of a check that fails on the data (the config's, see checks.py).
    | EVALUATION_ERROR_CLASSES
)
# What to do about each input cause, added to the reason (by error class or class).
INPUT_HINTS = {
    "INCONSISTENT_BEHAVIOR_CROSS_VERSION": (
        "the file holds dates before 1582-10-15 or timestamps before 1900 and does not say "
        "which calendar wrote them; rewrite it with a writer that records it (Spark 3+, "
        "parquet-mr with the proleptic Gregorian calendar), or drop those values"
    ),
    "DECIMAL_PRECISION_EXCEEDS_MAX_PRECISION": (
        "Spark and Iceberg hold decimals of at most 38 digits: write that column as "
        "decimal(38, s) or less, or as a string"
    ),
    "COLUMN_ALREADY_EXISTS": "rename one of the two columns of that name",
    "_LEGACY_ERROR_TEMP_1173": (
        "Spark cannot read nanosecond timestamps nor time-of-day (time32/time64) columns: "
        "write timestamps in microseconds (pyarrow: coerce_timestamps='us') and times as a "
        "string or a number"
    ),
    "UNSUPPORTED_CODEC": (
        "the file is compressed with a codec the job cannot decode (e.g. brotli, lz4_raw): "
        "write it with snappy, zstd, gzip or no compression"
    ),
}
INPUT_HINTS["PARQUET_TYPE_ILLEGAL"] = INPUT_HINTS["_LEGACY_ERROR_TEMP_1173"]
UNSUPPORTED_CODEC = "UNSUPPORTED_CODEC"
_CODEC_CLASS = re.compile(r"^[\w.$]+\.\w+Codec$")  # a compression codec's class
INFRASTRUCTURE_ERROR_CLASSES = frozenset(
    {
        "PATH_NOT_FOUND",  # a source is a staged copy the trigger just made: missing = not ours
    }
)
# Java classes, matched against every class in a cause's hierarchy.
INPUT_CLASSES = frozenset(
    {
        "org.apache.parquet.io.ParquetDecodingException",  # the bytes of a page do not decode
        "shaded.parquet.org.apache.thrift.protocol.TProtocolException",  # page header (thrift)
        "org.apache.thrift.protocol.TProtocolException",  # the same from an unshaded parquet
        # Iceberg refusing the schema or partition spec the file or the config asks for
        # (e.g. day() on a double at CREATE TABLE).
        "org.apache.iceberg.exceptions.ValidationException",
    }
)
INFRASTRUCTURE_CLASSES = frozenset(
    {
        # Every filesystem and network failure: S3 503/throttling, access denied, a missing
        # file, no FileSystem for a scheme, connection refused, timeouts.
        "java.io.IOException",
        "java.io.UncheckedIOException",
        "org.apache.iceberg.exceptions.RuntimeIOException",
        "org.apache.iceberg.exceptions.NotFoundException",  # a file Iceberg's metadata names
        "org.apache.iceberg.exceptions.CommitFailedException",
        "org.apache.iceberg.exceptions.CommitStateUnknownException",
        "org.apache.iceberg.exceptions.ServiceFailureException",
        "org.apache.iceberg.exceptions.ServiceUnavailableException",
        "java.lang.ClassNotFoundException",  # a jar missing from the cluster
        "java.lang.LinkageError",  # NoClassDefFoundError and friends
        "java.lang.VirtualMachineError",  # out of memory
        "java.util.concurrent.TimeoutException",
    }
)
INFRASTRUCTURE_PACKAGES = (
    "org.projectnessie.",  # Nessie's client: unreachable, HTTP 4xx/5xx, conflicts
    "com.amazonaws.",  # AWS SDK v1 (EMRFS)
    "software.amazon.awssdk.",  # AWS SDK v2 (S3FileIO)
    "com.amazon.ws.emr.hadoop.fs.",  # EMRFS
)


@dataclass(frozen=True)
class Verdict:
    """What decided a failure: `kind` is INPUT or INFRASTRUCTURE; `cause` names the typed
    cause (a class, a Spark error class, or UNKNOWN when nothing matched)."""

    kind: str
    cause: str
    java_cause: Any = None  # the deciding Java throwable, when a JVM cause decided

    @property
    def is_input(self) -> bool:
        """True when the input decided the failure (the report says `rejected`)."""
        return self.kind == INPUT

    @property
    def known(self) -> bool:
        """False when no typed cause matched and the default (infrastructure) applied."""
        return self.cause != UNKNOWN


def classify(exc: BaseException) -> Verdict:
    """Whether the input or the infrastructure caused `exc`, from typed causes only.

    The job's own errors carry the answer; a JVM failure is decided by its root-most
    cause that names one (so an S3 503 under a footer error is infrastructure, a thrift
    decode error under an IOException is input); Python types last. Unknown is
    infrastructure.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, WapJobError):
            kind = INFRASTRUCTURE if current.infrastructure else INPUT
            return Verdict(kind, type(current).__name__)
        if isinstance(current, _config.TableConfigError):  # the config parser's
            return Verdict(INPUT, type(current).__name__)
        throwable = java_throwable(current)
        if throwable is not None:
            verdict = _classify_java(throwable)
            if verdict is not None:
                return verdict
        else:
            verdict = _classify_python(current)
            if verdict is not None:
                return verdict
        current = current.__cause__
    return Verdict(INFRASTRUCTURE, UNKNOWN)


def as_job_error(
    exc: BaseException, message: str, input_error: type[WapJobError] = InputRejectedError
) -> WapJobError:
    """`input_error(message)` when the input caused `exc`, else an InfrastructureError
    whose message ends with the deciding cause (`[NessieUnavailableException]`)."""
    if isinstance(exc, WapJobError):
        return exc
    if isinstance(exc, _config.TableConfigError):  # the parser's words, as the Lambdas say
        return TableConfigError(str(exc))
    verdict = classify(exc)
    if verdict.is_input:
        return input_error(with_hint(message, verdict))
    if verdict.known:
        message = f"{message} [{verdict.cause.rsplit('.', 1)[-1]}]"
    return InfrastructureError(message)


def with_hint(message: str, verdict: Verdict) -> str:
    """`message. <what to do>` for an input cause that has advice (INPUT_HINTS)."""
    hint = INPUT_HINTS.get(verdict.cause) if verdict.is_input else None
    return f"{message.rstrip('. ')}. {hint}" if hint else message


def java_throwable(exc: BaseException) -> Any:
    """The Java throwable behind a py4j/PySpark exception, None for pure Python ones."""
    # Py4JJavaError keeps it in `java_exception`; PySpark's converted exceptions
    # (AnalysisException, IllegalArgumentException, ...) in `_origin`.
    for attribute in ("java_exception", "_origin"):
        throwable = getattr(exc, attribute, None)
        if throwable is not None:
            return throwable
    return None


def java_causes(throwable: Any) -> list[Any]:
    """`throwable` and its causes, outermost first."""
    chain = [throwable]
    while len(chain) < MAX_CAUSES:
        cause = chain[-1].getCause()
        if cause is None or any(cause.equals(known) for known in chain):
            break
        chain.append(cause)
    return chain


def _classify_java(throwable: Any) -> Verdict | None:
    for cause in reversed(java_causes(throwable)):
        verdict = _classify_throwable(cause)
        if verdict is not None:
            return verdict
    return None


def _classify_throwable(throwable: Any) -> Verdict | None:
    error_class = _error_class(throwable)
    if error_class in INPUT_ERROR_CLASSES:
        return Verdict(INPUT, error_class, throwable)
    if error_class in INFRASTRUCTURE_ERROR_CLASSES:
        return Verdict(INFRASTRUCTURE, error_class, throwable)
    hierarchy = _hierarchy(throwable)
    name = hierarchy[0]
    if name == "java.lang.ClassNotFoundException" and _CODEC_CLASS.match(
        str(throwable.getMessage() or "").strip()
    ):
        return Verdict(INPUT, UNSUPPORTED_CODEC, throwable)  # the file's codec, not a jar
    if any(cls in INPUT_CLASSES for cls in hierarchy):
        return Verdict(INPUT, name, throwable)
    if any(
        cls in INFRASTRUCTURE_CLASSES or cls.startswith(INFRASTRUCTURE_PACKAGES)
        for cls in hierarchy
    ):
        return Verdict(INFRASTRUCTURE, name, throwable)
    if name == "java.lang.NullPointerException" and _is_not_null_assertion(throwable):
        return Verdict(INPUT, NOT_NULL_NPE, throwable)
    origin = _throwing_class(throwable)
    if name == "java.lang.IllegalArgumentException" and origin.startswith("org.apache.iceberg."):
        return Verdict(INPUT, name, throwable)  # Iceberg refusing a transform, a width
    if name == "java.lang.RuntimeException" and (
        origin.endswith(".RaiseError") or ".expressions.GeneratedClass" in origin
    ):
        # Spark 3.5's assert_true/raise_error: a bare RuntimeException from the expression
        # or the generated code it is inlined in (Spark 4: USER_RAISED_EXCEPTION).
        return Verdict(INPUT, "USER_RAISED_EXCEPTION", throwable)
    return None


def _throwing_class(throwable: Any) -> str:
    frames = throwable.getStackTrace()
    return str(frames[0].getClassName()) if len(frames) else ""


def _classify_python(exc: BaseException) -> Verdict | None:
    try:
        from py4j.protocol import Py4JError
    except ImportError:  # the config parser runs without py4j in tests of the bundle
        Py4JError = ()
    try:
        import yaml

        yaml_error: tuple[type[BaseException], ...] = (yaml.YAMLError,)
    except ImportError:
        yaml_error = ()
    if isinstance(exc, yaml_error):
        return Verdict(INPUT, type(exc).__name__)
    # OSError covers urllib's URLError, refused connections and timeouts; a Py4JError
    # without a Java cause is the gateway to the driver JVM itself failing.
    if isinstance(exc, (OSError, Py4JError)):
        return Verdict(INFRASTRUCTURE, type(exc).__name__)
    return None


def _error_class(throwable: Any) -> str | None:
    try:
        from py4j.java_gateway import is_instance_of
        from pyspark import SparkContext
    except ImportError:
        return None
    gateway = SparkContext._gateway
    if gateway is None or not is_instance_of(gateway, throwable, "org.apache.spark.SparkThrowable"):
        return None
    error_class = throwable.getErrorClass()
    return str(error_class).split(".", 1)[0] if error_class else None


def _hierarchy(throwable: Any) -> list[str]:
    names, cls = [], throwable.getClass()
    while cls is not None:
        names.append(str(cls.getName()))
        cls = cls.getSuperclass()
    return names


def _is_not_null_assertion(throwable: Any) -> bool:
    """A null in a NOT NULL column under Spark 3.5: AssertNotNull throws a plain
    NullPointerException, from its own `eval` or from the generated code it is inlined in.

    The class and throwing frame are checked first; the fixed message is checked as well
    because Spark 3.5 gives this NullPointerException no error class, and a bug in
    generated code would throw one from the same frame.
    """
    frames = throwable.getStackTrace()
    if len(frames) == 0:
        return False
    origin = str(frames[0].getClassName())
    if not (
        origin == "org.apache.spark.sql.catalyst.expressions.objects.AssertNotNull"
        or origin.startswith("org.apache.spark.sql.catalyst.expressions.GeneratedClass")
    ):
        return False
    return str(throwable.getMessage() or "").startswith(NOT_NULL_MESSAGE)


def not_null_column(verdict: Verdict) -> str | None:
    """The column a NOT NULL assertion failed on, when `verdict` is one."""
    throwable = verdict.java_cause
    if throwable is None or not verdict.is_input:
        return None
    if verdict.cause == "NOT_NULL_ASSERT_VIOLATION":
        parameters = throwable.getMessageParameters()
        path = parameters.get("walkedTypePath") if parameters is not None else None
        return str(path).strip() or None if path is not None else None
    if verdict.cause == NOT_NULL_NPE:
        # "...non-nullable field:\n<column>\nIf the schema is inferred ...": one line per
        # level of the path, and a column name may hold spaces.
        lines = str(throwable.getMessage() or "").splitlines()
        return lines[1].strip() or None if len(lines) > 1 else None
    return None


def describe(exc: BaseException, limit: int = 400) -> str:
    """One readable line for an exception, from the JVM's root cause when there is one.

    Spark wraps the interesting part ("Null value appeared in non-nullable field",
    "is not a Parquet file") several causes deep behind "Job aborted ..."; causes without
    a message (a refused connection) are named by class after the deepest message.
    """
    throwable = java_throwable(exc)
    text = _describe_java(java_causes(throwable)) if throwable is not None else str(exc)
    text = " ".join(line.strip() for line in text.strip().splitlines()[:3] if line.strip())
    return (text[:limit] + "...") if len(text) > limit else (text or type(exc).__name__)


def _describe_java(chain: list[Any]) -> str:
    messages = [str(cause.getMessage() or "").strip() for cause in chain]
    holder = max((index for index, message in enumerate(messages) if message), default=None)
    if holder is None:
        return str(chain[-1].toString())
    # A wrapper that only adds context in front of its cause's message reads better
    # ("can not read class ...PageHeader: don't know what type: 15").
    while (
        holder > 0
        and messages[holder - 1].endswith(messages[holder])
        and "\n" not in messages[holder - 1]
    ):
        holder -= 1
    text = messages[holder]
    below = [str(cause.getClass().getName()) for cause in chain[holder + 1 :]]
    below = [name for name in below if name not in text]
    if below:
        text = f"{text.splitlines()[0]} (caused by {', '.join(dict.fromkeys(below))})"
    return text
