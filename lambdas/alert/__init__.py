"""Slack alert for ingests that did not publish (audit failed, rejected, job or publish failed)."""
