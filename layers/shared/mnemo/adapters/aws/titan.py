"""Embedder on Amazon Bedrock Titan Text Embeddings V2.

Request body (InvokeModel, documented by Bedrock for amazon.titan-embed-text-v2:0):
``{"inputText": str, "dimensions": 256 | 512 | 1024, "normalize": true}``;
response ``{"embedding": [float], "inputTextTokenCount": int}``. The model
embeds one text per call; ``normalize`` makes the vectors unit length, which
the inner-product index relies on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from mnemo import telemetry
from mnemo.adapters.aws.clients import LazyClient
from mnemo.adapters.aws.errors import provider_error

#: Titan V2 accepts up to 8,192 tokens or 50,000 characters.
MAX_CHARACTERS = 50_000


class TitanEmbedder(LazyClient):
    """The Embedder port on Titan Text Embeddings V2 (one InvokeModel per text); counts the tokens it used."""

    def __init__(
        self,
        client_factory: Callable[[], Any],
        model_id: str = "amazon.titan-embed-text-v2:0",
        dimensions: int = 1024,
    ) -> None:
        if dimensions not in (256, 512, 1024):
            raise ValueError("Titan Text Embeddings V2 offers 256, 512 or 1024 dimensions")
        super().__init__(client_factory)
        self.model_id = model_id
        self.dimensions = dimensions
        self.name = f"titan-embed-text-v2:{dimensions}"
        self.tokens_used = 0

    def _request_body(self, text: str) -> dict[str, Any]:
        """The documented InvokeModel body for one text (cut to ``MAX_CHARACTERS``)."""
        return {"inputText": text[:MAX_CHARACTERS], "dimensions": self.dimensions, "normalize": True}

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One call per text; ProviderError when an answer has no embedding of the configured size."""
        from botocore.exceptions import BotoCoreError, ClientError

        vectors = []
        for text in texts:
            try:
                response = self.client.invoke_model(
                    modelId=self.model_id,
                    body=json.dumps(self._request_body(text)),
                    contentType="application/json",
                    accept="application/json",
                )
                payload = json.loads(response["body"].read())
            except (ClientError, BotoCoreError) as error:
                raise provider_error("Bedrock", error) from error
            embedding = payload.get("embedding")
            if not isinstance(embedding, list) or len(embedding) != self.dimensions:
                raise provider_error("Bedrock", ValueError("Titan answered without an embedding of the asked size"))
            tokens = int(payload.get("inputTextTokenCount", 0))
            self.tokens_used += tokens
            telemetry.count("EmbeddingTokens", tokens)
            vectors.append([float(value) for value in embedding])
        return vectors
