"""The `wap.*` properties our commits carry, defined once (docs/contracts.md).

The job sets them on the Iceberg snapshot it appends (`snapshot-property.<name>`), the
publish and compaction merges on their Nessie commits' metadata; the Nessie UI stand-in,
`wap`, the dashboard and the job itself (finding its own snapshot again) read them back.
"""

from __future__ import annotations

# The ingest (or batch, or maintenance run) a snapshot or merge belongs to.
INGEST_ID_PROPERTY = "wap.ingest-id"
# The one data file a metrics-table append added (docs/metric-history.md): the history
# read opens the window's files by it, without the table's manifests.
METRICS_FILE_PROPERTY = "wap.metrics-file"
# The uploaded object versions a snapshot's rows came from, comma-separated.
SOURCE_PROPERTY = "wap.source"
# What made a merge: `publish`, `manual-publish`.
ACTION_PROPERTY = "wap.action"
# The maintenance a merge carries out: `compaction`.
MAINTENANCE_PROPERTY = "wap.maintenance"
# The audited snapshot an automatic publish merged.
SNAPSHOT_ID_PROPERTY = "wap.snapshot-id"
# Who published a held branch by hand (`wap publish`), and the reason they gave.
REVIEWED_BY_PROPERTY = "wap.reviewed-by"
REVIEW_REASON_PROPERTY = "wap.reason"
