"""Contract suites: one suite per port over both adapter sets, the embedded one (SQLite, a directory, the
local index) and the AWS one on stand-ins: DynamoDB, S3 and EventBridge on the serial moto server of
tests/support/aws_fixtures.py (one per process, in a thread), OpenSearch on clones of the osmem-server the
osmem pytest plugin starts (one process per pytest process), Bedrock through botocore's Stubber, and the
model adapters against local HTTP servers of their own. test_extractors.py also starts `mnemo serve` as a
child process. Every server takes a free port and every stack a temporary directory. No fixtures of their
own (``osmem_clone`` is the osmem plugin's)."""
