"""Tests of `contracts/`."""
