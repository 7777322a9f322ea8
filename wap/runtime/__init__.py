"""What `wap` runs in local mode: the home directory (`home`), the state kept in it between
commands (`state_store`, the ledger's SQLite file `ledger_db`), the embedded stack that
composes `local/`'s stand-ins over it (`embedded_stack`), the catalog server on its fixed
address (`catalog_server`) and the demo's data (`sample_data`)."""
