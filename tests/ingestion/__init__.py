"""Tests of `ingestion/`."""
