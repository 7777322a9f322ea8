"""Tests of `local/nessie/`."""
