"""Code outline (experimental): the tree-sitter extractors per language over tests/fixtures/outline/shop,
name resolution across a project, and the outline index and tools on the embedded stack, in process.
Nothing is started (the outline on the AWS adapters is in tests/contract). No fixtures of their own."""
