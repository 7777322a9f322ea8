"""Tests of `lakeview/`."""
