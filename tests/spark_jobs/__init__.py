"""Tests of `spark_jobs/`."""
