"""Tests of `local/`."""
