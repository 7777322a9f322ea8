"""Slack alerts for ingests that did not publish: the alert event, the message, delivery.

Used by the alert Lambda (lambdas/alert/handler.py) and by the functions that alert an
ingest directly (one that never ran: rejected, or unable to start)."""
