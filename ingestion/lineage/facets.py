"""Our own OpenLineage facets (custom facets are prefixed `wap_`), as the client's models.

Each extends the client's base facet class, so `Serde` writes `_producer` and `_schemaURL`
like any standard facet; docs/lineage.md describes their fields.
"""

from __future__ import annotations

import attr
from openlineage.client.generated.base import DatasetFacet, RunFacet

PRODUCER = "urn:wap-ingest:lambdas"
_SCHEMA = "urn:wap-ingest:openlineage:1-0-0:"


@attr.define
class WapIngestRunFacet(RunFacet):
    """What the ingest is and how it ended: the ledger's outcome, in our words."""

    ingestId: str  # camelCase: the JSON names of a facet, as OpenLineage writes them
    table: str
    status: str | None = attr.field(default=None)
    reason: str | None = attr.field(default=None)
    reasonCode: str | None = attr.field(default=None)
    # The Nessie branch left open for review (an audit that did not pass), else None.
    reviewBranch: str | None = attr.field(default=None)
    attempt: int | None = attr.field(default=None)
    files: int | None = attr.field(default=None)
    reportUri: str | None = attr.field(default=None)
    # Who published or discarded it by hand (`wap publish`, `wap discard`), and why.
    reviewer: str | None = attr.field(default=None)
    reviewReason: str | None = attr.field(default=None)

    @staticmethod
    def _get_schema() -> str:
        return _SCHEMA + "WapIngestRunFacet"


@attr.define
class NessieReferenceDatasetFacet(DatasetFacet):
    """Where the Iceberg table's rows are: the Nessie reference, its hash, the snapshot."""

    reference: str
    hash: str | None = attr.field(default=None)
    snapshotId: str | None = attr.field(default=None)

    @staticmethod
    def _get_schema() -> str:
        return _SCHEMA + "NessieReferenceDatasetFacet"
