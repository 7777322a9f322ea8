"""Reading a stack's lake: Iceberg tables through pyiceberg (`iceberg`) and the SQL that
shows a failed check's rows (`check_sql`); what cannot be read raises
`exceptions.TableReadError`. Used by the tools (`wap/`) and the local catalog UI
(`local/nessie/ui/`), so it imports neither."""
