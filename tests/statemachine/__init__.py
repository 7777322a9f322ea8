"""Tests of `statemachine/`."""
