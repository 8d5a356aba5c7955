"""The catalog and what is generated from it (JSON Schema, OpenAPI, the tool reference, the client's
tools), with every docstring's JSON example run as a test, in process on the embedded stack. Nothing is
started. No fixtures of their own."""
