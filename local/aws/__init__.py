"""The in-process AWS stand-in: moto + Lambda dispatch to our handlers + a local EMR Serverless.

`LocalAwsStack` (stack.py) composes the pieces from the synthesized CDK template
(template.py, intrinsics.py, overrides.py); the `wap` CLI and the tests use it.
"""
