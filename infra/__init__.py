"""CDK app of the WAP ingestion service: `app.py` -> one stack (`stack.py`) of constructs.

network (VPC), storage (buckets), catalog (Nessie on Fargate), compute (EMR
Serverless + job code), pipeline (ledger, Lambdas, rule, state machine), alerts
(Slack secret, alarms). Names and sizes live in `constants.py`, per-environment
values in `settings.py` (CDK context); `bundling.py` builds assets without Docker.
"""
