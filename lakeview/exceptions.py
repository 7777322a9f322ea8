"""The one error of reading the lake: the tools (`wap`) and the local catalog UI
(`local/nessie/ui/`) show its one-line message as they show their own errors."""

from __future__ import annotations


class TableReadError(Exception):
    """An Iceberg table's metadata or data files could not be read (pyiceberg)."""
