"""The product tools: the `wap` CLI (`cli/`), the operations it runs on a stack, local or
deployed (`ops/`), the dashboard (`dashboard/`), and reading the lake's Iceberg tables
(`lake/`). The local runtime they drive in local mode lives in `local/`."""
