"""Reading a stack's lake: Iceberg tables through pyiceberg (`iceberg`) and the SQL that
shows a failed check's rows (`check_sql`). Used by the tools and the local catalog UI."""
