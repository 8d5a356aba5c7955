"""Services: each family's domain rules in process, through the catalog or the service, on the embedded
stack (temporary data dirs, the hashing embedder; the `model` tests load bge once per process) and, for
the file tools, concurrency, outages and the cost meter, on DynamoDB and S3 in the serial moto server of
tests/support/aws_fixtures.py (one per process, in a thread) or OpenSearch on osmem-server clones.
test_response_budget.py serves the tools from `mnemo serve` in a thread on a free port. No child
process, no browser. No fixtures of their own."""
