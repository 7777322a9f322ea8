"""Tests of `wap/runtime/`."""
