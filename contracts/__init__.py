"""The payloads the parts exchange, each defined once (docs/contracts.md is checked against them).

Standard library only and Python 3.9-compatible: the Spark job imports this package on
EMR Serverless (from `spark_jobs.zip`), beside every Lambda, the `wap` CLI and the
dashboard. It imports nothing else of ours (tests/test_import_rules.py).

- `contracts.report`: the audit report the job writes (`AuditReport`, `CheckResult`).
- `contracts.state`: the state machine's payloads (`ExecutionInput`, `ExecutionState`,
  `Run`, `Outcome`, `FinishResult`).
- `contracts.alert`: the alert event (`AlertEvent`).
- `contracts.naming`: identifiers, table names, ingest ids, Nessie reference names, WAP branch
  names.
- `contracts.timestamps`: dates and timestamps in table configs, parsed alike on 3.9 and 3.11.
- `contracts.job_args`: the Spark job's arguments (`JobArgs`, `SmokeArgs`, `CompactionArgs`).
- `contracts.layout`: S3 key prefixes, marker files and which object names are data.
- `contracts.properties`: the `wap.*` properties of snapshots and merge commits.
- `contracts.catalog_ui`: the catalog UI's paths and URLs.
"""

from contracts.fields import ContractError

__all__ = ["ContractError"]
