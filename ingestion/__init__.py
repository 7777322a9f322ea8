"""The domain of the ingestion service, below the Lambdas, the `wap` tools and the stack.

- `ledger/`: ingest and batch records, table locks and queues (DynamoDB), typed updates;
  `lifecycle.py`: `settle`, the one way an ingest ends (outcome, time, alert, metrics,
  lineage), over the statuses and transitions of `contracts/lifecycle.py`;
- `naming.py`, `staging.py`: routing keys to tables, ingest ids, branches, staged copies
  (the key layout itself is `contracts/layout.py`);
- `ingest.py`, `batching.py`: starting runs (branch, job, execution), batches and datasets;
- `nessie.py` (the one Nessie client), `published.py` (main moves only by merging the
  audited commit), `compaction.py`, `maintenance/` (garbage collection);
- `alerting/`, `alerts.py`, `lineage/`, `metrics.py`: what an ending tells the world;
- `config.py`: the Lambdas' settings, read once from the environment.

It imports only itself and `contracts/` (tests/test_import_rules.py).
"""
