"""EventPublisher in process: subscribers are called synchronously, in order."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from mnemo.ports import Event

Subscriber = Callable[[Event], None]


class LocalEventBus:
    """The EventPublisher port in process: each subscriber is called in the publishing thread, in order."""

    def __init__(self) -> None:
        self._subscribers: list[tuple[str | None, Subscriber]] = []
        self._lock = threading.Lock()

    def subscribe(self, subscriber: Subscriber, detail_type: str | None = None) -> None:
        """Call ``subscriber`` with every event published from now on (of ``detail_type`` only, if given).

        Not part of the EventPublisher port: it is the consumer's side, which on AWS is an EventBridge rule.
        """
        with self._lock:
            self._subscribers.append((detail_type, subscriber))

    def publish(self, events: Sequence[Event]) -> None:
        """Hand each event to its subscribers before returning; a subscriber's exception stops the rest."""
        with self._lock:
            subscribers = list(self._subscribers)
        for event in events:
            for wanted, subscriber in subscribers:
                if wanted is None or wanted == event.detail_type:
                    subscriber(event)
