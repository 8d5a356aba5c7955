"""The code outline family (``OUTLINE|{scope}``, experimental): what the cross-cutting parts know of it
(``mnemo.families``). Its layout (``F#{language}#{path}``: one file's outline) is ``mnemo.outline.index``'s.

No events, not indexed, not exported (the next outline call rebuilds it); erased with the user's personal
scopes.
"""

from __future__ import annotations

from mnemo.families import RecordFamily

PARTITION = "OUTLINE|"
#: A file's outline: ``F#{language}#{path}``.
FILE = "F#"

FAMILY = RecordFamily(
    name="outlines", partition=PARTITION, package="mnemo.outline", sort_keys=(FILE,), personal=True, erasure_order=80
)
