"""Tests of `wap/ops/`."""
