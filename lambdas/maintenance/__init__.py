"""Maintenance Lambda (scheduled): garbage collection across Nessie references."""
