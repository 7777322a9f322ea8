"""Tests of `lambdas/`."""
