"""The compaction job's result, as it crosses from the job (spark_jobs/compaction.py writes
it, `wap_job.py --compact` puts it at `--report-uri`) to whoever publishes it (the
maintenance Lambda on AWS, `wap maintain` locally): read here, once.

Standard library only (bundled into the job's zip and every Lambda), Python 3.9.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contracts.fields import ContractError

REPORT_KIND = "compaction"
REPORT_VERSION = 1


class CompactionReportError(ContractError):
    """A compaction report that does not have the expected shape."""


@dataclass(frozen=True)
class CompactionVerdict:
    """What publishing a compaction needs: did the audit pass, did the rewrite commit a new
    snapshot at all, and the numbers the operator sees."""

    table: str
    branch: str
    passed: bool
    changed: bool
    reason: str | None
    files_before: int
    files_after: int
    rows: int
    # The branch's head after the rewrite, as the job saw it: what publishing merges (None
    # when the caller ran the job in-process and reads the head itself).
    head_hash: str | None = None
    snapshot_id: int | None = None  # the table's snapshot after the rewrite, audited

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CompactionVerdict:
        """Read a report (`CompactionResult.to_dict()`, or the job's JSON of it); raises
        CompactionReportError naming what is missing or wrong."""
        try:
            before, after = data["before"], data["after"]
            verdict = cls(
                table=str(data["table"]),
                branch=str(data["branch"]),
                passed=data["passed"],
                changed=data["changed"],
                reason=data.get("reason"),
                files_before=int(before["data_files"]),
                files_after=int(after["data_files"]),
                rows=int(after["rows"]),
                head_hash=data.get("head_hash"),
                snapshot_id=after.get("snapshot_id"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CompactionReportError(f"not a compaction report: {exc!r}") from exc
        if not isinstance(verdict.passed, bool) or not isinstance(verdict.changed, bool):
            raise CompactionReportError("not a compaction report: passed/changed not booleans")
        return verdict
