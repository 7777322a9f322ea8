"""Retry an ingest's job run after an infrastructure error, on the same branch."""
