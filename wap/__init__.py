"""The product tools: the `wap` CLI (`cli/`), the operations it runs on a stack, local or
deployed (`ops/`), the dashboard (`dashboard/`), and what local mode runs (`runtime/`: the
home directory and the embedded stack over it, which composes the stand-ins in `local/`).
They read the lake's Iceberg tables through `lakeview/`, as the local catalog UI does."""
