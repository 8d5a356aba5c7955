"""The AWS adapters: DynamoDB records, S3 blobs, OpenSearch, Bedrock (Titan, Converse) and EventBridge."""
