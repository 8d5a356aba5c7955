"""File tools: StoredAssets (pinned blocks, skills), the project workspace, topic notes and knowledge
items behind one set of operations on paths (seed 004). The path's scheme picks the store; nothing
else differs. Tools are listed in an order whose examples chain: write a block, append to it, read
it, list, search, pin it, load the pinned context, expand a prompt, unpin and delete it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnemo.context import RequestContext
from mnemo.files.models import (
    BlockPinInput,
    BlockPinOutput,
    BlockUnpinInput,
    ExpandPromptInput,
    ExpandPromptOutput,
    FileDeleteInput,
    FileDeleteOutput,
    FileEditInput,
    FileListInput,
    FileListOutput,
    FileReadInput,
    FileReadOutput,
    FileSearchInput,
    FileSearchOutput,
    FileWriteInput,
    FileWriteOutput,
    PinnedContextInput,
    PinnedContextOutput,
)
from mnemo.tools.registry import tool
from mnemo.tools.rights import WORKSPACE_DELETE, WORKSPACE_READ, WORKSPACE_WRITE, Rights, Runtime

if TYPE_CHECKING:
    from mnemo.runtime import Services


#: What this family is for, in a sentence: its Bedrock action group and function descriptions.
SUMMARY = "Pinned blocks, skills, the project workspace, topic notes and knowledge items as files"


# mnemo/files/service.py routes each path by scheme: a block is embedded and indexed, a workspace
# file is put as a new object version, a topic is memorized or refined.
@tool(
    "files",
    rights=Rights(records="read-write", embeds=True, index="write", bucket=WORKSPACE_WRITE),
    runtime=Runtime(block_budget=True),
)
def file_write(services: Services, context: RequestContext, request: FileWriteInput) -> FileWriteOutput:
    """[SPECIFICATION] Writes a whole file: a block, a skill, a workspace file or a topic note.

    Tool exposure: `file_write`

    Creates the file or replaces its content, as a new version; earlier versions
    are kept. The path's scheme picks the store: `mnemo:///blocks/<name>` and
    `mnemo:///skills/<name>` are your own StoredAssets (`mnemo://project/...` the
    project's, with the writer role), a relative path such as `docs/api.md` is the
    project workspace, `topic://<name>` a topic note; `knowledge://` is read-only.
    Pass `expectedVersion` (0 for "must not exist yet") to refuse overwriting a
    change made meanwhile. A block someone has pinned is checked against their
    token budget before anything is written; a write that does not grow the file
    (compacting it) always passes.

    **When to use:** to create a file, or to rewrite one after reading it (for
    instance to compact a block that has grown).

    **Usage:**
    ```json
    {"path": "mnemo:///blocks/decisions.md", "content": "# Decisions\\n\\n- Orders live in PostgreSQL 16.\\n[END]\\n"}
    ```

    **Returns:**
    ```json
    {"success": true, "message": "mnemo:///blocks/decisions.md created (version 1)", "path": "mnemo:///blocks/decisions.md", "kind": "block", "version": 1, "created": true, "tokens": 15, "bytes": 51, "replacements": null, "pinned": false, "pinnedTokens": 0, "budgetTokens": 100000}
    ```

    **Errors:**
    - INVALID_INPUT: a path with an unknown scheme, absolute, with `..` or any
      segment that would leave its scope, or naming `knowledge://` (read-only);
      content over 1,000,000 characters; ids the scope needs are missing from the
      request context. Details name the field.
    - UNAUTHORIZED: changing the project's files without the writer role.
    - CONFLICT: `expectedVersion` is stale (not retryable: read again), or a
      concurrent write won (retryable);
      or, with `details.reason` BLOCK_BUDGET_EXCEEDED (not retryable as is), the
      write would take a pinned context past its budget: `details` give `current`,
      `limit`, `size` (this file's tokens), `wouldBe` and `advice` (compact a block
      or unpin one).

    @see mnemo.files.service.FileService.write
    """
    return services.files.write(context, request)


# Reads the file (a workspace file's object at the version its head names) and writes it back as
# file_write does.
@tool(
    "files",
    rights=Rights(records="read-write", embeds=True, index="write", bucket=WORKSPACE_READ | WORKSPACE_WRITE),
    runtime=Runtime(block_budget=True),
)
def file_edit(services: Services, context: RequestContext, request: FileEditInput) -> FileWriteOutput:
    """[SPECIFICATION] Replaces text in a file: `old` must occur exactly once, or every time with `replaceAll`.

    Tool exposure: `file_edit`

    Reads the file, replaces `old` with `new` and writes the result as the next
    version, refusing the write if the file changed in between. Works on every
    path file_write takes. The same budget rule as file_write applies to a block
    someone has pinned.

    **When to use:** to append to a block (replace an end marker with new lines
    and the marker) or change one passage without resending the whole file.

    **Usage:**
    ```json
    {"path": "mnemo:///blocks/decisions.md", "old": "[END]", "new": "- Releases go out on Tuesdays.\\n[END]"}
    ```

    **Returns:**
    ```json
    {"success": true, "message": "mnemo:///blocks/decisions.md edited (1 replacement)", "path": "mnemo:///blocks/decisions.md", "kind": "block", "version": 2, "created": false, "tokens": 23, "bytes": 82, "replacements": 1, "pinned": false, "pinnedTokens": 0, "budgetTokens": 100000}
    ```

    **Errors:**
    - NOT_FOUND: no such file, or `old` does not occur in it (details name `old`).
    - INVALID_INPUT: a bad path (as for file_write); the result over 1,000,000 characters.
    - UNAUTHORIZED: changing the project's files without the writer role.
    - CONFLICT: `old` occurs more than once without `replaceAll` (details give
      `occurrences`; not retryable); `expectedVersion` is stale (not retryable);
      a concurrent write won (retryable); or the block budget would be exceeded
      (as for file_write).

    @see mnemo.files.service.FileService.edit
    """
    return services.files.edit(context, request)


# A block's chunks, a workspace object version, a topic or a knowledge item; its references are
# checked against heads, topics and knowledge items, all in the records.
@tool(
    "files",
    rights=Rights(records="read", bucket=WORKSPACE_READ),
)
def file_read(services: Services, context: RequestContext, request: FileReadInput) -> FileReadOutput:
    """[SPECIFICATION] Reads a file, or part of it in lines, on any path the file tools take.

    Tool exposure: `file_read`

    Returns the lines from `offset` (0-based) up to `limit`, with the file's
    `totalLines`, `version` and estimated `tokens`. When more lines follow (or the
    transport's answer is full), `hasMore` is true and `nextOffset` is the offset
    to ask for next. `version` reads an earlier version of a block, skill or
    workspace file. `references` lists the paths the file mentions
    (`mnemo://...`, `topic://...`, `knowledge://...`, `src/db/schema.sql`) and
    whether each exists for you; `pinned` says whether you have a block pinned.

    **When to use:** before editing or compacting a file, or to follow a reference.

    **Usage:**
    ```json
    {"path": "mnemo:///blocks/decisions.md"}
    ```

    **Returns:**
    ```json
    {"success": true, "path": "mnemo:///blocks/decisions.md", "kind": "block", "content": "# Decisions\\n\\n- Orders live in PostgreSQL 16.\\n- Releases go out on Tuesdays.\\n[END]\\n", "version": 2, "totalLines": 5, "offset": 0, "returnedLines": 5, "hasMore": false, "nextOffset": null, "tokens": 23, "lastUpdated": "2026-01-07T10:00:00Z", "pinned": false, "references": []}
    ```

    **Errors:**
    - NOT_FOUND: no such file, or no such earlier version (kept: the last 20 of a
      block; a deleted file's earlier versions stay readable).
    - INVALID_INPUT: a bad path; `offset` past the end; ids the scope needs are
      missing; one line alone longer than the transport's answer (details name `limit`).

    @see mnemo.files.service.FileService.read
    """
    return services.files.read(context, request)


# Lists heads (a workspace's too: no bucket listing), topic heads and the knowledge catalog.
@tool(
    "files",
    rights=Rights(records="read"),
)
def file_list(services: Services, context: RequestContext, request: FileListInput) -> FileListOutput:
    """[SPECIFICATION] Lists the files under a path: workspace folders, blocks, skills, topics, knowledge.

    Tool exposure: `file_list`

    `path` is a folder: `''` (the whole workspace), `src/`, `mnemo:///` (your
    blocks and skills), `mnemo:///blocks/`, `mnemo://project/`, `topic://` or
    `knowledge://`. Entries come in name order with version, tokens, size and
    whether you have them pinned; `nextCursor` continues a long listing.

    **When to use:** to see what exists before reading, pinning or expanding it.

    **Usage:**
    ```json
    {"path": "mnemo:///blocks/"}
    ```

    **Returns:**
    ```json
    {"success": true, "path": "mnemo:///blocks/", "entries": [{"path": "mnemo:///blocks/decisions.md", "kind": "block", "version": 2, "tokens": 23, "bytes": 82, "lastUpdated": "2026-01-07T10:00:00Z", "pinned": false, "sha256": "92d34d1ba5e6051333fe3ce5981f80b70d5553f532e8d81891840464f0d11687"}], "count": 1, "hasMore": false, "nextCursor": null}
    ```

    **Errors:**
    - INVALID_INPUT: a bad path or cursor; ids the scope needs are missing.

    @see mnemo.files.service.FileService.list
    """
    return services.files.list_files(context, request)


@tool(
    "files",
    rights=Rights(records="read", embeds=True, index="read"),
)
def file_search(services: Services, context: RequestContext, request: FileSearchInput) -> FileSearchOutput:
    """[SPECIFICATION] Searches the content of blocks and skills: yours, your user's and your project's.

    Tool exposure: `file_search`

    Hybrid BM25 and vector similarity on the same calibrated 0-1 score as
    memory_search, best first, below `threshold` dropped. Each result has the
    file's path, a snippet of its start, version, tokens and whether you have it
    pinned.

    **When to use:** to find the block or skill about a subject before reading or pinning it.

    **Usage:**
    ```json
    {"query": "which database holds the orders"}
    ```

    **Returns:**
    ```json
    {"success": true, "results": [{"path": "mnemo:///blocks/decisions.md", "kind": "block", "score": 0.71, "snippet": "# Decisions\\n\\n- Orders live in PostgreSQL 16.", "version": 2, "tokens": 23, "pinned": false}], "totalCount": 1, "retrieval": "hybrid", "message": "Found 1 file"}
    ```

    **Errors:**
    - INVALID_INPUT: a blank query; limit outside 1-50; threshold outside 0-1; no user id.

    @see mnemo.files.service.FileService.search
    """
    return services.files.search(context, request)


# Rewrites the caller's pin set and the file's pinner list, in the records only.
@tool(
    "files",
    rights=Rights(records="read-put"),
    runtime=Runtime(block_budget=True),
)
def block_pin(services: Services, context: RequestContext, request: BlockPinInput) -> BlockPinOutput:
    """[SPECIFICATION] Pins a block or skill into your context, within your token budget.

    Tool exposure: `block_pin`

    Pinned files make up pinned_context, in order (`position` puts this one there;
    by default it goes last). The pinned total, in estimated tokens, is checked
    before the pin: over the budget (100,000 by default) the answer is CONFLICT
    with `details.reason` BLOCK_BUDGET_EXCEEDED and the numbers (`current`,
    `limit`, `size`, `wouldBe`, `advice`). Pinning a pinned file again changes
    nothing (or moves it to `position`).

    **When to use:** for what every turn should see: decisions, preferences, patterns.

    **Usage:**
    ```json
    {"path": "mnemo:///blocks/decisions.md"}
    ```

    **Returns:**
    ```json
    {"success": true, "message": "mnemo:///blocks/decisions.md pinned", "path": "mnemo:///blocks/decisions.md", "pinned": true, "changed": true, "position": 0, "tokens": 23, "pinnedTokens": 23, "budgetTokens": 100000, "pinnedCount": 1}
    ```

    **Errors:**
    - NOT_FOUND: no such file.
    - INVALID_INPUT: not a `mnemo://` path; 200 files pinned already; no user id.
    - CONFLICT: the budget would be exceeded (not retryable as is: compact or
      unpin first), or the file or your pins changed meanwhile (retryable).

    @see mnemo.files.pinning.Pinning.pin
    """
    return services.pinning.pin(context, request)


@tool(
    "files",
    rights=Rights(records="read"),
    runtime=Runtime(block_budget=True),
)
def pinned_context(services: Services, context: RequestContext, request: PinnedContextInput) -> PinnedContextOutput:
    """[SPECIFICATION] Returns your pinned blocks and skills, in order, ready for a system prompt.

    Tool exposure: `pinned_context`

    Each file comes wrapped in `<block path="..." tokens="..." version="...">`,
    separated by blank lines; `totalTokens` is their sum against `budgetTokens`.
    A pinned file of a project shows only while you work in that project
    (`inactive` counts the others, which still take budget).
    A context too long for the transport's answer comes in parts: `hasMore` is
    true and `nextOffset` is the `offset` to ask for the rest with; a part's
    `blocks` lists the files it shows some of.

    **When to use:** at the start of a session or turn, to load what is pinned.

    **Usage:**
    ```json
    {}
    ```

    **Returns:**
    ```json
    {"success": true, "context": "<block path=\\"mnemo:///blocks/decisions.md\\" tokens=\\"23\\" version=\\"2\\">\\n# Decisions\\n\\n- Orders live in PostgreSQL 16.\\n- Releases go out on Tuesdays.\\n[END]\\n</block>", "blocks": [{"path": "mnemo:///blocks/decisions.md", "kind": "block", "position": 0, "tokens": 23, "version": 2}], "count": 1, "totalTokens": 23, "budgetTokens": 100000, "inactive": 0, "totalChars": 158, "hasMore": false, "nextOffset": null}
    ```

    **Errors:**
    - INVALID_INPUT: no user id; `offset` past the end.

    @see mnemo.files.pinning.Pinning.context
    """
    return services.pinning.context(context, request)


# Reads each marker's file as file_read does.
@tool(
    "files",
    rights=Rights(records="read", bucket=WORKSPACE_READ),
)
def expand_prompt(services: Services, context: RequestContext, request: ExpandPromptInput) -> ExpandPromptOutput:
    """[SPECIFICATION] Replaces `@path` and `@@name` markers in a prompt with the content they name.

    Tool exposure: `expand_prompt`

    `@@name` is your block `mnemo:///blocks/name` (`.md` may be left out; a
    skill of that name if there is no block); `@path` is any path the file tools
    take: `@src/auth.c`, `@mnemo://project/blocks/x.md`, `@topic://deploy`,
    `@knowledge://ADR-042`. Each becomes `<file path="..." version="...">` with
    the content; expanded content is not expanded again. A marker starts a word
    (`alice@example.com` is left alone), `@path` must look like a path (hold a
    `/` or a `.`, so `@here` stays text), and code spans and fenced blocks are
    left as they are. A marker naming nothing you can read is NOT_FOUND, or, with
    `onMissing` "keep", left as written and listed in `missing`. The expanded
    text may take at most `maxChars`; a longer one comes in parts (`hasMore`,
    `nextOffset`) when the transport's answer is full.

    **When to use:** before sending a user's prompt that refers to files by marker.

    **Usage:**
    ```json
    {"text": "Add the orders endpoint following @@decisions."}
    ```

    **Returns:**
    ```json
    {"success": true, "text": "Add the orders endpoint following <file path=\\"mnemo:///blocks/decisions.md\\" version=\\"2\\">\\n# Decisions\\n\\n- Orders live in PostgreSQL 16.\\n- Releases go out on Tuesdays.\\n[END]\\n</file>.", "expansions": [{"marker": "@@decisions", "path": "mnemo:///blocks/decisions.md", "kind": "block", "version": 2, "tokens": 23, "chars": 82}], "missing": [], "tokens": 49, "totalChars": 179, "hasMore": false, "nextOffset": null}
    ```

    **Errors:**
    - NOT_FOUND: a marker names nothing you can read (details give `marker` and what was tried).
    - INVALID_INPUT: a marker holds a bad path; the expansion would pass `maxChars`
      (details give `chars`); text over 100,000 characters.

    @see mnemo.files.expansion.Expander.expand
    """
    return services.expander.expand(context, request)


@tool(
    "files",
    rights=Rights(records="read-put"),
    runtime=Runtime(block_budget=True),
)
def block_unpin(services: Services, context: RequestContext, request: BlockUnpinInput) -> BlockPinOutput:
    """[SPECIFICATION] Unpins a block or skill: it leaves your pinned context and budget, and stays stored.

    Tool exposure: `block_unpin`

    Unpinning a file that is not pinned changes nothing (`changed` is false), so a
    retried call is harmless.

    **When to use:** when a pinned file is no longer needed every turn, or to make
    room in the budget.

    **Usage:**
    ```json
    {"path": "mnemo:///blocks/decisions.md"}
    ```

    **Returns:**
    ```json
    {"success": true, "message": "mnemo:///blocks/decisions.md unpinned", "path": "mnemo:///blocks/decisions.md", "pinned": false, "changed": true, "position": null, "tokens": 23, "pinnedTokens": 0, "budgetTokens": 100000, "pinnedCount": 0}
    ```

    **Errors:**
    - INVALID_INPUT: not a `mnemo://` path; no user id.
    - CONFLICT: the file or your pins changed meanwhile (retryable).

    @see mnemo.files.pinning.Pinning.unpin
    """
    return services.pinning.unpin(context, request)


# A block loses its index document and pins; a workspace object gets a delete marker (the bucket
# keeps its versions); a topic is forgotten as forget_memory does. Nothing is embedded.
@tool(
    "files",
    rights=Rights(records="read-write", index="delete", bucket=WORKSPACE_DELETE),
)
def file_delete(services: Services, context: RequestContext, request: FileDeleteInput) -> FileDeleteOutput:
    """[SPECIFICATION] Deletes a file; its history is kept, and it leaves every pinned context.

    Tool exposure: `file_delete`

    A block or skill also leaves the search index; a workspace file gets a delete
    marker in its store; `topic://` forgets the topic. Writing the path again
    later continues its version numbers.

    **When to use:** when a file is obsolete or was written by mistake.

    **Usage:**
    ```json
    {"path": "mnemo:///blocks/decisions.md"}
    ```

    **Returns:**
    ```json
    {"success": true, "message": "mnemo:///blocks/decisions.md deleted", "path": "mnemo:///blocks/decisions.md", "kind": "block", "version": 3, "unpinnedFor": 0}
    ```

    **Errors:**
    - NOT_FOUND: no such file.
    - INVALID_INPUT: a bad path, or `knowledge://` (read-only).
    - UNAUTHORIZED: changing the project's files without the writer role.
    - CONFLICT: `expectedVersion` is stale (not retryable: read again), or the file
      changed meanwhile (retryable).

    @see mnemo.files.service.FileService.delete
    """
    return services.files.delete(context, request)
