"""Tests of `wap/cli/`."""
