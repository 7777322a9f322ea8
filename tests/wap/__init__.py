"""Tests of `wap/`."""
