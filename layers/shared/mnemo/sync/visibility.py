"""Which sync failures a caller may see: a failure's path and error quote the file."""

from __future__ import annotations

from collections.abc import Sequence

from mnemo.context import WRITER_ROLE, RequestContext
from mnemo.knowledge.documents import DocumentError, place_of
from mnemo.sync.models import FailedItem


def visible_failures(context: RequestContext, failures: Sequence[FailedItem]) -> list[FailedItem]:
    """The failures of files in layers the caller can read: a path and an error quote the file."""
    shown = []
    for failure in failures:
        try:
            place = place_of(failure.path)
        except DocumentError:  # fits no layer: a tenant-wide problem, for those who maintain knowledge
            if WRITER_ROLE in context.roles:
                shown.append(failure)
            continue
        if place.layer == "company" or getattr(context, place.layer) == place.layer_id:
            shown.append(failure)
    return shown
