"""The embedded adapters: SQLite records, the in-process vector index, blobs in a directory, the ONNX and
hashing embedders, the in-process event bus and an OpenAI-compatible extractor."""
