"""The VectorIndex port on OpenSearch (managed domain or OpenSearch Serverless)."""
