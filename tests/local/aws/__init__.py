"""Tests of `local/aws/`."""
