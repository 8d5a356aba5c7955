"""EventPublisher on Amazon EventBridge (PutEvents, at most 10 entries a call)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from mnemo.adapters.aws.clients import LazyClient
from mnemo.adapters.aws.errors import provider_error
from mnemo.errors import ProviderError
from mnemo.ports import Event

_BATCH = 10


class EventBridgePublisher(LazyClient):
    """The EventPublisher port on one EventBridge bus."""

    def __init__(self, bus: str, client_factory: Callable[[], Any]) -> None:
        self._bus = bus
        super().__init__(client_factory)

    def publish(self, events: Sequence[Event]) -> None:
        """PutEvents in batches of 10; ProviderError if any entry is refused (earlier batches stay sent)."""
        from botocore.exceptions import BotoCoreError, ClientError

        for start in range(0, len(events), _BATCH):
            entries = [
                {
                    "Source": event.source,
                    "DetailType": event.detail_type,
                    "Detail": json.dumps(event.detail),
                    "EventBusName": self._bus,
                }
                for event in events[start : start + _BATCH]
            ]
            try:
                response = self.client.put_events(Entries=entries)
            except (ClientError, BotoCoreError) as error:
                raise provider_error("EventBridge", error) from error
            if response.get("FailedEntryCount"):
                codes = [entry.get("ErrorCode") for entry in response["Entries"] if entry.get("ErrorCode")]
                raise ProviderError("EventBridge refused events", {"service": "EventBridge", "errorCodes": codes})
