"""Tests of `lambdas/common/`."""
