"""Tests of `lambdas/trigger/`."""
