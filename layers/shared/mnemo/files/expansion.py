"""expand_prompt: ``@path`` and ``@@name`` markers replaced by the content they name (seed 004).

Each marker becomes the file wrapped in a ``<file>`` tag naming its path and
version. Expanded content is not expanded again, so files that mention each
other cannot loop. A marker naming nothing the caller can read, or an
expansion past ``maxChars``, is an error that names the marker: nothing is
silently left out of a prompt.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnemo.budget import RESERVE_BYTES, longest_prefix, wire_bytes
from mnemo.context import RequestContext
from mnemo.errors import InvalidInput, NotFound, invalid_field
from mnemo.files.models import ExpandPromptInput, ExpandPromptOutput, Expansion
from mnemo.files.paths import FilePath, parse_path
from mnemo.files.references import Marker, markers
from mnemo.files.tokens import count_tokens

if TYPE_CHECKING:
    from mnemo.files.service import FileService, FileText


def _candidates(marker: Marker) -> list[str]:
    if not marker.block:
        return [marker.target]
    name = marker.target.removeprefix("mnemo:///").removeprefix("blocks/")
    suffixes = ("",) if name.endswith(".md") else ("", ".md")
    return [f"mnemo:///{kind}/{name}{suffix}" for kind in ("blocks", "skills") for suffix in suffixes]


class Expander:
    def __init__(self, files: FileService) -> None:
        self._files = files

    def _resolve(self, context: RequestContext, marker: Marker) -> tuple[FilePath, FileText]:
        tried = []
        for candidate in _candidates(marker):
            try:
                path = parse_path(candidate, field="text")
            except InvalidInput as error:
                problem = error.message.removeprefix("text: ")
                raise invalid_field("text", f"{marker.text}: {problem}", marker=marker.text) from None
            tried.append(path.uri)
            try:
                return path, self._files.read_text(context, path)
            except NotFound:
                continue
        raise NotFound(
            f"{marker.text} names nothing you can read (tried {', '.join(tried)})",
            {"field": "text", "marker": marker.text, "tried": tried},
        )

    def expand(self, context: RequestContext, request: ExpandPromptInput) -> ExpandPromptOutput:
        pieces: list[str] = []
        expansions: list[Expansion] = []
        cursor = 0
        size = 0
        missing: list[str] = []
        for marker in markers(request.text):
            try:
                path, found = self._resolve(context, marker)
            except NotFound:
                if request.on_missing == "error":
                    raise
                missing.append(marker.text)
                continue
            content, version = found.content, found.version
            attributes = f'path="{path.uri}"' + (f' version="{version}"' if version is not None else "")
            block = f"<file {attributes}>\n{content.rstrip(chr(10))}\n</file>"
            pieces += [request.text[cursor : marker.start], block]
            cursor = marker.end
            size += len(block) - (marker.end - marker.start)
            if len(request.text) + size > request.max_chars:
                raise invalid_field(
                    "maxChars",
                    f"expanding {marker.text} takes the prompt to {len(request.text) + size} characters, "
                    f"more than maxChars ({request.max_chars})",
                    marker=marker.text,
                    chars=len(request.text) + size,
                )
            expansions.append(
                Expansion(
                    marker=marker.text,
                    path=path.uri,
                    kind=path.kind,
                    version=version if isinstance(version, int) else 0,
                    tokens=count_tokens(content),
                    chars=len(content),
                )
            )
        pieces.append(request.text[cursor:])
        whole = "".join(pieces)
        if request.offset > len(whole):
            raise invalid_field("offset", f"the expanded text has {len(whole)} characters", totalChars=len(whole))
        output = ExpandPromptOutput(
            text=whole[request.offset :],
            expansions=expansions,
            missing=missing,
            tokens=count_tokens(whole),
            total_chars=len(whole),
        )
        budget = context.response_budget
        if budget is not None and wire_bytes(output) > budget:
            limit = budget - RESERVE_BYTES
            piece = output.text
            kept = longest_prefix(piece, lambda prefix: wire_bytes(output.model_copy(update={"text": prefix})) <= limit)
            if not kept:
                raise invalid_field(
                    "offset", f"the list of expansions alone does not fit the transport's {budget} bytes"
                )
            output.text, output.has_more, output.next_offset = piece[:kept], True, request.offset + kept
        return output
