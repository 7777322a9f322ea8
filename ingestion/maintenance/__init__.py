"""Lake maintenance the operator tools and the daily Lambda share: garbage collection across
every Nessie reference and its summary."""
