"""A local EMR Serverless: moto's API, with job runs that really run.

moto creates job runs directly in SUCCESS and runs nothing. Installed, this
executor makes `start_job_run` (through boto3, against moto) behave like the
service: the run is SUBMITTED, then RUNNING on a worker thread, then SUCCESS,
FAILED (with the error in `stateDetails` and a driver log under the run's
log URI) or CANCELLED; a repeated `clientToken` returns the same run.
`s3://` sources, table config and report are staged between moto S3 and
local files around the job, as EMR's S3 connector would read/write them.
The run's `sparkSubmitParameters` are parsed as the service passes them to
spark-submit (a malformed one fails the run) and recorded in `submissions`; a job
with a `check_submit(submission)` method (the real job) refuses parameters that
differ from what it runs with.

GetJobRun answers as the service does: `createdAt` is the submission's time (moto's is
midnight), `startedAt` when it runs, and only once the run has ended `endedAt`,
`totalExecutionDurationSeconds`, `totalResourceUtilization` and
`billedResourceUtilization` (moto reports zeros from the start). The resources are what
the local run really used (`local.aws.job_usage`): its CPU seconds as vCPU-hours, its
peak memory over its wall time as GB-hours, no storage (EMR bills only above 20 GB per
worker); unlike EMR, no 1-minute minimum per worker.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import logging
import queue
import shutil
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from contracts.job_args import JobArgs, RunArgs, parse_run_args
from local.aws import job_waits
from local.aws.job_usage import UsageMeter

_log = logging.getLogger(__name__)

# A job: contract arguments (docs/contracts.md) with local file:// URIs -> report dict or None.
JobFunction = Callable[[list[str]], Any]
# spark-submit options that take one value (EMR Serverless passes them on as given).
SUBMIT_OPTIONS = frozenset(
    {
        "--conf",
        "--jars",
        "--py-files",
        "--files",
        "--archives",
        "--class",
        "--packages",
        "--repositories",
        "--exclude-packages",
        "--name",
        "--driver-memory",
        "--driver-cores",
        "--executor-memory",
        "--executor-cores",
        "--num-executors",
        "--properties-file",
    }
)


class SubmitParametersError(ValueError):
    """sparkSubmitParameters spark-submit would refuse."""


@dataclass(frozen=True)
class SparkSubmit:
    """A job run's spark-submit: entry point, `--conf` pairs and the other options."""

    entry_point: str
    conf: dict[str, str]
    options: dict[str, list[str]]


def parse_spark_submit(entry_point: str, parameters: str | None) -> SparkSubmit:
    """Read `sparkSubmitParameters` like the service: split on whitespace, no quoting."""
    tokens = (parameters or "").split()
    conf: dict[str, str] = {}
    options: dict[str, list[str]] = {}
    position = 0
    while position < len(tokens):
        option = tokens[position]
        if option not in SUBMIT_OPTIONS:
            raise SubmitParametersError(f"sparkSubmitParameters: unrecognized option {option!r}")
        if position + 1 >= len(tokens):
            raise SubmitParametersError(f"sparkSubmitParameters: {option} has no value")
        value = tokens[position + 1]
        if option == "--conf":
            key, equals, conf_value = value.partition("=")
            if not equals or not key:
                raise SubmitParametersError(f"sparkSubmitParameters: --conf {value!r} is not k=v")
            conf[key] = conf_value
        else:
            options.setdefault(option, []).append(value)
        position += 2
    return SparkSubmit(entry_point=entry_point, conf=conf, options=options)


class InjectedCrash(RuntimeError):
    """Raised inside a job run by `LocalEmrServerless.inject_crash`."""


@dataclass
class _Fault:
    kind: str  # "crash" | "hang" | "queue"
    message: str
    match: str | None  # substring of the job arguments, None = next run
    seconds: float = 0.0


@dataclass
class _Run:
    job_run: Any  # moto's JobRun
    cancel: threading.Event = field(default_factory=threading.Event)


def _as_given(report: bytes, staged: dict[str, str]) -> bytes:
    """The report as the job on EMR writes it: naming its sources by the `s3://` URIs it
    was given, not the local copies the double ran it on (`staged`: local copy -> given;
    each copy's URI, as a JSON string, is unique: it holds the copy's position)."""
    text = report.decode("utf-8")
    for local, given in staged.items():
        text = text.replace(json.dumps(local)[1:-1], json.dumps(given)[1:-1])
    return text.encode("utf-8")


class LocalEmrServerless:
    """Installs into moto's EMR Serverless backend and runs job runs on worker threads."""

    def __init__(self, job: JobFunction, *, workers: int = 1, s3_client: Any = None) -> None:
        self._job = job
        self._workers = workers
        self._s3 = s3_client
        # The job role's session (AWS_ACCESS_KEY_ID, ...): the run's S3 reads and writes are
        # made as the job role, as EMR Serverless makes them (None: the process's identity).
        self.credentials: dict[str, str] | None = None
        self._queue: queue.Queue[_Run | None] = queue.Queue()
        self._runs: dict[str, _Run] = {}
        self._tokens: dict[tuple[str, str], Any] = {}
        self._faults: list[_Fault] = []
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._busy = 0
        self._originals: dict[str, Any] = {}
        self.started_runs: list[str] = []  # job run ids in start order
        self.submissions: dict[str, SparkSubmit] = {}  # job run id -> its parsed spark-submit
        self.max_concurrent = 0

    # ---- test hooks ----------------------------------------------------------------------

    def inject_crash(
        self, message: str = "injected executor crash", *, match: str | None = None
    ) -> None:
        """Make the next run (or the next whose arguments contain `match`) crash."""
        with self._lock:
            self._faults.append(_Fault("crash", message, match))

    def inject_hang(self, *, match: str | None = None) -> None:
        """Make the next matching run hang until it is cancelled."""
        with self._lock:
            self._faults.append(_Fault("hang", "", match))

    def inject_queue_delay(self, seconds: float, *, match: str | None = None) -> None:
        """Keep the next matching run PENDING for `seconds` (EMR waiting for capacity)."""
        with self._lock:
            self._faults.append(_Fault("queue", "", match, seconds))

    def idle(self) -> bool:
        with self._lock:
            return self._busy == 0 and self._queue.empty()

    # ---- moto patch ----------------------------------------------------------------------

    def install(self) -> None:
        from moto.emrserverless.models import EMRServerlessBackend

        self._originals = {
            "start_job_run": EMRServerlessBackend.start_job_run,
            "cancel_job_run": EMRServerlessBackend.cancel_job_run,
        }
        executor, original_start = self, EMRServerlessBackend.start_job_run

        def start_job_run(
            backend: Any, application_id: str, client_token: str, *args: Any, **kwargs: Any
        ) -> Any:
            with executor._lock:
                existing = executor._tokens.get((application_id, client_token))
                if existing is not None:  # the service's clientToken idempotency
                    return existing
                job_run = original_start(backend, application_id, client_token, *args, **kwargs)
                job_run.state = "SUBMITTED"
                # As the service: submitted now; what a run ended with, only once it has.
                job_run.created_at = job_run.updated_at = datetime.now(UTC)
                job_run.billed_resource_utilization = None
                job_run.total_execution_duration_seconds = None
                executor._tokens[(application_id, client_token)] = job_run
                run = _Run(job_run)
                executor._runs[job_run.id] = run
                executor.started_runs.append(job_run.id)
            executor._queue.put(run)
            return job_run

        def cancel_job_run(backend: Any, application_id: str, job_run_id: str) -> tuple[str, str]:
            from moto.emrserverless.exceptions import ValidationException

            job_run = backend.get_job_run(application_id, job_run_id)
            if job_run.state in ("SUCCESS", "FAILED", "CANCELLED"):
                # As the service: a run that has ended cannot be cancelled.
                raise ValidationException(
                    f"Job run {job_run_id} is in a terminal state {job_run.state}"
                )
            run = executor._runs.get(job_run_id)
            if job_run.state == "RUNNING":
                job_run.state = "CANCELLING"
            else:  # it never ran: nothing used
                _ended(job_run, None)
                job_run.state = "CANCELLED"
            if run is not None:
                run.cancel.set()
            return application_id, job_run_id

        EMRServerlessBackend.start_job_run = start_job_run
        EMRServerlessBackend.cancel_job_run = cancel_job_run
        for i in range(self._workers):
            thread = threading.Thread(target=self._work, name=f"emr-local-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def uninstall(self) -> None:
        from moto.emrserverless.models import EMRServerlessBackend

        for name, original in self._originals.items():
            setattr(EMRServerlessBackend, name, original)
        self._originals = {}
        for run in list(self._runs.values()):
            run.cancel.set()
        for _ in self._threads:
            self._queue.put(None)
        for thread in self._threads:
            thread.join(timeout=60)
        self._threads = []

    # ---- execution -----------------------------------------------------------------------

    def _take_fault(self, argv: list[str]) -> _Fault | None:
        with self._lock:
            joined = " ".join(argv)
            for fault in self._faults:
                if fault.match is None or fault.match in joined:
                    self._faults.remove(fault)
                    return fault
        return None

    def _work(self) -> None:
        while True:
            run = self._queue.get()
            if run is None:
                return
            with self._lock:
                self._busy += 1
                self.max_concurrent = max(self.max_concurrent, self._busy)
            try:
                self._execute(run)
            except Exception:  # never let a worker die: record and move on
                _log.exception("local EMR worker error")
                _ended(run.job_run, None)
                run.job_run.state = "FAILED"
            finally:
                with self._lock:
                    self._busy -= 1
                job_waits.job_runs_changed()

    def _execute(self, run: _Run) -> None:
        job_run = run.job_run
        driver = job_run.job_driver["sparkSubmit"]
        argv = list(driver.get("entryPointArguments", []))
        fault = self._take_fault(argv)
        if fault is not None and fault.kind == "queue":
            job_run.state = "PENDING"
            run.cancel.wait(fault.seconds)
        if run.cancel.is_set() or job_run.state == "CANCELLED":
            _ended(job_run, None)
            job_run.state = "CANCELLED"
            return
        meter = UsageMeter.start(getattr(self._job, "usage_pids", lambda: [])())
        job_run.state = "RUNNING"
        # The service sets startedAt when the run leaves the queue (moto never does);
        # the job timeout counts from it.
        job_run.started_at = datetime.now(UTC)
        workdir = Path(tempfile.mkdtemp(prefix=f"emr-{job_run.id}-"))
        log_lines = [f"job run {job_run.id}: {' '.join(argv)}"]
        final = "FAILED"
        try:
            if fault is not None and fault.kind == "hang":
                run.cancel.wait()
                raise _Cancelled()
            if fault is not None and fault.kind == "crash":
                raise InjectedCrash(fault.message)
            submission = parse_spark_submit(
                driver["entryPoint"], driver.get("sparkSubmitParameters")
            )
            self.submissions[job_run.id] = submission
            check_submit = getattr(self._job, "check_submit", None)
            if check_submit is not None:
                check_submit(submission)
            args = parse_run_args(argv)  # malformed: the run fails, as the job exits 2
            local_args, staged, local_report = self._stage(args, workdir)
            # The job reads its catalog secret with its own role's keys, as on EMR.
            use_keys = getattr(self._job, "use_aws_credentials", None)
            if use_keys is not None:
                use_keys(self.credentials)
            result = self._job(local_args.to_args())
            if run.cancel.is_set():
                raise _Cancelled()
            body = (
                local_report.read_bytes()
                if local_report.exists()
                else json.dumps(result).encode()
                if isinstance(result, dict)
                else None
            )
            if body is not None:
                self._put(args.report_uri, _as_given(body, staged), look_first=True)
            final = "SUCCESS"
            log_lines.append("SUCCESS")
        except _Cancelled:
            final = "CANCELLED"
            job_run.state_details = "Job run was cancelled."
            log_lines.append("CANCELLED")
        except Exception as exc:
            log_lines.append("".join(traceback.format_exception(exc)))
            job_run.state_details = (
                "Job failed, please check complete logs in configured logging destination. "
                f"ExitCode: 1. Last few exceptions: {type(exc).__name__}: {exc}"
            )
            final = "FAILED"
        finally:
            # What the ended run used is there before a poll can see it ended, as on EMR.
            _ended(job_run, meter)
            job_run.state = final
            self._write_log(job_run, "\n".join(log_lines))
            shutil.rmtree(workdir, ignore_errors=True)

    def _stage(self, args: RunArgs, workdir: Path) -> tuple[RunArgs, dict[str, str], Path]:
        """`args` with s3:// inputs copied to local files and the report pointed at a local
        file; and the local copies' URIs, each to the s3:// URI it was given as."""
        staged: dict[str, str] = {}

        def stage(uri: str | None, *, missing_ok: bool = True) -> str | None:
            if not uri or not uri.startswith("s3://"):
                return uri
            # The object's own name, as EMR's job reads it from S3 (glob characters, spaces
            # and all), in a folder per input; a raw file: URI, as an s3:// one is not
            # %-encoded either.
            target = workdir / "in" / str(len(staged)) / uri.rsplit("/", 1)[-1]
            target.parent.mkdir(parents=True, exist_ok=True)
            body = self._get(uri, missing_ok=missing_ok)
            if body is not None:  # a missing table config stays missing (job defaults)
                target.write_bytes(body)
            staged[f"file://{target}"] = uri
            return f"file://{target}"

        def stage_prefix(prefix: str, tables: list[str]) -> str:
            # A multi-table dataset reads `<prefix><table>.yaml` for each of its tables.
            folder = workdir / "in" / str(len(staged))
            folder.mkdir(parents=True, exist_ok=True)
            for table in tables:
                body = self._get(f"{prefix}{table}.yaml", missing_ok=True)
                if body is not None:
                    (folder / f"{table}.yaml").write_bytes(body)
            staged[f"file://{folder}/"] = prefix
            return f"file://{folder}/"

        local_report = workdir / "out" / "report.json"
        local_report.parent.mkdir(parents=True, exist_ok=True)
        changes: dict[str, Any] = {"report_uri": local_report.as_uri()}
        if args.report_uri.startswith("s3://"):
            staged[local_report.as_uri()] = args.report_uri
        if isinstance(args, JobArgs):
            changes["sources"] = [stage(uri, missing_ok=False) for uri in args.sources]
            config = args.table_config_uri
            changes["table_config_uri"] = (
                stage_prefix(config, self._dataset_tables(args))
                if config and config.startswith("s3://") and config.endswith("/")
                else stage(config)
            )
            changes["dataset_config_uri"] = stage(args.dataset_config_uri)
        return dataclasses.replace(args, **changes), staged, local_report

    def _dataset_tables(self, args: JobArgs) -> list[str]:
        """The tables a dataset run reads configs for: its config's, else its sources'."""
        tables = list(dict.fromkeys(args.source_tables))
        uri = args.dataset_config_uri
        body = self._get(uri, missing_ok=True) if uri else None
        if body is not None:
            import yaml

            from contracts.dataset_config import parse_dataset_config_bytes
            from contracts.table_config import TableConfigError

            with contextlib.suppress(TableConfigError):  # the job says what is wrong itself
                tables += parse_dataset_config_bytes(body, uri, yaml=yaml).tables
        return list(dict.fromkeys(tables))

    def _client(self) -> Any:
        if self._s3 is None:
            import boto3

            keys = {
                f"aws_{name[4:].lower()}": value for name, value in (self.credentials or {}).items()
            }
            self._s3 = boto3.client("s3", **keys)
        return self._s3

    def _get(self, uri: str, *, missing_ok: bool = False) -> bytes | None:
        bucket, key = uri[5:].split("/", 1)
        s3 = self._client()
        try:
            return s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        except s3.exceptions.NoSuchKey:
            if missing_ok:
                return None
            raise

    def _put(self, uri: str, body: bytes, *, look_first: bool = False) -> None:
        bucket, key = uri[5:].split("/", 1)
        s3 = self._client()
        if look_first:
            # The job writes through Hadoop's S3 file system, which looks before it creates
            # a file (getFileStatus: a HEAD, needing s3:GetObject); a 404 is the answer.
            try:
                s3.head_object(Bucket=bucket, Key=key)
            except s3.exceptions.ClientError as exc:
                if exc.response.get("Error", {}).get("Code") not in ("404", "NoSuchKey"):
                    raise
        s3.put_object(Bucket=bucket, Key=key, Body=body)

    def _write_log(self, job_run: Any, text: str) -> None:
        """The driver log where EMR Serverless puts it: <logUri>/applications/<app>/jobs/<id>/."""
        monitoring = (job_run.configuration_overrides or {}).get("monitoringConfiguration", {})
        log_uri = monitoring.get("s3MonitoringConfiguration", {}).get("logUri")
        if not log_uri or not log_uri.startswith("s3://"):
            return
        base = log_uri if log_uri.endswith("/") else log_uri + "/"
        try:
            self._put(
                f"{base}applications/{job_run.application_id}/jobs/{job_run.id}"
                "/SPARK_DRIVER/stderr",
                text.encode(),
            )
        except Exception:
            _log.exception("could not write the driver log of %s", job_run.id)


class _Cancelled(Exception):
    pass


def _ended(job_run: Any, meter: UsageMeter | None) -> None:
    """What GetJobRun adds when a run ends: its end time, duration and resources (what
    `meter` measured since the run started; none for a run that never ran)."""
    now = datetime.now(UTC)
    job_run.ended_at = job_run.updated_at = now
    started = getattr(job_run, "started_at", None)
    job_run.total_execution_duration_seconds = (
        max(0, round((now - started).total_seconds())) if started else 0
    )
    usage = meter.stop() if meter is not None else None
    used = {
        "vCPUHour": usage.vcpu_hours if usage else 0.0,
        "memoryGBHour": usage.memory_gb_hours if usage else 0.0,
        "storageGBHour": 0.0,
    }
    job_run.total_resource_utilization = dict(used)
    job_run.billed_resource_utilization = dict(used)


def job_archive() -> Path:
    """The job's `--py-files` zip exactly as the deploy builds and uploads it (cached by hash)."""
    from infra import bundling
    from infra.constants import SourceTree
    from spark_jobs.package import ZIP_NAME

    return bundling.spark_job_package(spark_jobs_dir=SourceTree().spark_jobs_dir) / ZIP_NAME


_JOB_PACKAGE = "spark_jobs"
# Every top-level package the archive carries: the job must run the archive's copy of each.
_ARCHIVE_PACKAGES = (_JOB_PACKAGE, "contracts")
_archive_lock = threading.Lock()
_archive_modules: dict[Path, ModuleType] = {}


def _in_package(name: str) -> bool:
    return any(name == package or name.startswith(package + ".") for package in _ARCHIVE_PACKAGES)


def load_archive_job(archive: Path) -> ModuleType:
    """`spark_jobs.wap_job` imported from `archive` by zipimport, as `--py-files` makes EMR do.

    Everyone else's `spark_jobs` and `contracts` stay the repository's: the archive's modules are
    imported with the repository's taken out of `sys.modules`, then those are put back.
    The archive's modules keep references to each other, so a run stays in the archive.
    Loaded once per archive path (archives are never rewritten in place: the deploy's
    path names its content hash), when the job is created, before any run thread imports.
    """
    archive = Path(archive).resolve()
    with _archive_lock:
        module = _archive_modules.get(archive)
        if module is not None:
            return module
        saved = {name: mod for name, mod in sys.modules.items() if _in_package(name)}
        for name in saved:
            del sys.modules[name]
        sys.path.insert(0, str(archive))
        try:
            module = importlib.import_module(f"{_JOB_PACKAGE}.wap_job")
        finally:
            sys.path.remove(str(archive))
            for name in [n for n in sys.modules if _in_package(n)]:
                del sys.modules[name]
            sys.modules.update(saved)
        if not str(module.__file__).startswith(f"{archive}/"):
            raise ImportError(f"spark_jobs.wap_job came from {module.__file__}, not {archive}")
        _archive_modules[archive] = module
        return module


class ArchiveJob:
    """The real job (`spark_jobs.wap_job` from the deployed archive) on a shared SparkSession."""

    def __init__(self, spark: Any, archive: Path) -> None:
        self.spark = spark
        self.archive = Path(archive).resolve()
        self.module = load_archive_job(self.archive)

    def __call__(self, argv: list[str]) -> dict[str, Any]:
        return self.module.run(self.spark, argv)

    def usage_pids(self) -> list[int]:
        """The processes a run uses besides its thread: the session's JVM (what a run
        used is measured on them, `local.aws.job_usage`)."""
        gateway = getattr(self.spark.sparkContext, "_gateway", None)
        process = getattr(gateway, "proc", None)
        return [process.pid] if process is not None else []

    def use_aws_credentials(self, credentials: dict[str, str] | None) -> None:
        """The AWS keys the job's own AWS calls sign with (its catalog secret's read): the
        job role's, as EMR Serverless gives the driver; None: the process's."""
        import boto3

        keys = {f"aws_{name[4:].lower()}": value for name, value in (credentials or {}).items()}
        self.module.catalog_secret.client_factory = (
            (lambda region: boto3.client("secretsmanager", region_name=region, **keys))
            if credentials
            else None
        )

    def check_submit(self, submission: SparkSubmit) -> None:
        """Refuse a run submitted with other Spark conf than this session's, or other code."""
        check_submission(submission, lambda key: self.spark.conf.get(key, None), self.archive.name)


def check_submission(
    submission: SparkSubmit, session_conf: Callable[[str], str | None], archive_name: str
) -> None:
    """Raise SubmitParametersError when the run would not run what the local job runs.

    Locations differ by design (the jar and the warehouse are S3 objects on AWS, local
    files here); every other `--conf` must be the session's, `--py-files` the archive.
    """
    from spark_jobs.conf import CATALOG

    locations = {"spark.jars", f"spark.sql.catalog.{CATALOG}.warehouse"}
    for key, value in submission.conf.items():
        local = session_conf(key)
        if key not in locations and local != value:
            raise SubmitParametersError(
                f"the run is submitted with --conf {key}={value} but the local session "
                f"runs the job with {key}={local}"
            )
    py_files = [uri.rsplit("/", 1)[-1] for uri in submission.options.get("--py-files", [])]
    if py_files != [archive_name]:
        raise SubmitParametersError(
            f"the run is submitted with --py-files {py_files}, the local job runs {archive_name}"
        )


def spark_job(spark: Any, *, archive: Path | None = None) -> ArchiveJob:
    """The real job from the archive the deploy uploads (`job_archive()` unless given)."""
    return ArchiveJob(spark, archive if archive is not None else job_archive())
