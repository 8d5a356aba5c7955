"""`mnemo workspace push|pull DIR`: the project workspace (the file tools' relative paths) from a shell.

Both commands run the file service in process, with the identity ``mnemo call``
uses (``MNEMO_TENANT``, ``MNEMO_USER``, ``MNEMO_PROJECT``, ``MNEMO_ROLES``...), so
every rule of ``file_write`` holds: path checks, versions (each push of a changed
file is a new version, written with ``expectedVersion`` so a change made meanwhile
is a CONFLICT, never overwritten) and the writer role for a project's workspace.

``push`` sends only what changed (the local SHA-256 against the ``sha256`` of the
listing) and skips what the workspace cannot or should not hold: hidden files and
folders, ``__pycache__``, ``node_modules``, symbolic links, files that are not
UTF-8 text, files over the size limit and names the path rules refuse.
``pull`` writes every workspace file (or those under ``--prefix``) into DIR and
never writes outside it.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import stat
import sys
import tempfile
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mnemo.cli.progress import FILES, Progress
from mnemo.errors import InvalidInput, MnemoError, Unauthorized
from mnemo.files.models import MAX_CONTENT_CHARS, MAX_LIST, FileEntry, FileListInput, FileWriteInput
from mnemo.files.paths import parse_path

if TYPE_CHECKING:
    from mnemo.context import RequestContext
    from mnemo.runtime import Services

#: Folders never pushed, whatever their place in the tree (besides every hidden one).
SKIPPED_FOLDERS = frozenset({"__pycache__", "node_modules"})
#: A UTF-8 character takes at most 4 bytes: a bigger file is over the limit without reading it.
_MAX_FILE_BYTES = 4 * MAX_CONTENT_CHARS


def shown(name: str) -> str:
    """A name safe to print: a file name that is not UTF-8 keeps its bytes as escapes."""
    return name.encode("utf-8", "backslashreplace").decode("utf-8")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ----------------------------------------------------------------- scan ---
@dataclass
class LocalFile:
    """A file under DIR the workspace can hold."""

    relative: str  # as found under DIR (posix)
    name: str  # the workspace path: the prefix and the relative path, NFC
    path: Path
    sha256: str


@dataclass
class Scan:
    files: list[LocalFile] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (relative path, why)


class Unfit(Exception):
    """A local file the workspace cannot hold, and why."""


def load_text(path: Path) -> tuple[str, bytes]:
    """A file's text and bytes; ``Unfit`` when it is not UTF-8 text or over the size limit."""
    size = path.stat().st_size
    if size > _MAX_FILE_BYTES:
        raise Unfit(f"over the {MAX_CONTENT_CHARS:,}-character limit of a workspace file ({size:,} bytes)")
    raw = path.read_bytes()
    if b"\x00" in raw:
        raise Unfit("not UTF-8 text (binary: holds NUL bytes)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise Unfit(f"not UTF-8 text (byte {error.start}: {error.reason})") from None
    if len(text) > MAX_CONTENT_CHARS:
        raise Unfit(f"over the {MAX_CONTENT_CHARS:,}-character limit of a workspace file ({len(text):,} characters)")
    return text, raw


def scan_tree(root: Path, prefix: str) -> Scan:
    """Every file under ``root`` the workspace can hold, in path order; and what was skipped, with why."""
    result = Scan()
    names: dict[str, str] = {}
    for directory, folders, files in os.walk(root, followlinks=False):
        here = Path(directory)
        base = here.relative_to(root).as_posix()
        base = "" if base == "." else base + "/"
        kept = []
        for folder in sorted(folders):
            why = _skipped_folder(here / folder, folder)
            if why is None:
                kept.append(folder)
            else:
                result.skipped.append((f"{base}{folder}/", why))
        folders[:] = kept
        for filename in sorted(files):
            relative = base + filename
            why, found = _examine(here / filename, filename, relative, prefix)
            if found is None:
                result.skipped.append((relative, why or "skipped"))
                continue
            if found.name in names:
                result.skipped.append((relative, f"the same workspace path as {names[found.name]} (Unicode NFC)"))
                continue
            names[found.name] = relative
            result.files.append(found)
    result.files.sort(key=lambda local: local.name)
    result.skipped.sort()
    return result


def _skipped_folder(path: Path, folder: str) -> str | None:
    if folder.startswith("."):
        return "hidden folder"
    if folder in SKIPPED_FOLDERS:
        return f"{folder} folder"
    if path.is_symlink():
        return "symbolic link"
    return None


def _examine(path: Path, filename: str, relative: str, prefix: str) -> tuple[str | None, LocalFile | None]:
    if filename.startswith("."):
        return "hidden file", None
    try:
        mode = path.lstat().st_mode
    except OSError as error:
        return f"cannot read: {error.strerror}", None
    if stat.S_ISLNK(mode):
        return "symbolic link", None
    if not stat.S_ISREG(mode):
        return "not a regular file", None
    name = unicodedata.normalize("NFC", prefix + relative)
    try:
        parse_path(name)
    except InvalidInput as error:
        return f"name refused by the path rules: {error.message}", None
    try:
        _, raw = load_text(path)
    except Unfit as error:
        return str(error), None
    except OSError as error:
        return f"cannot read: {error.strerror}", None
    return None, LocalFile(relative, name, path, _sha256(raw))


# --------------------------------------------------------------- common ---
def check_prefix(raw: str | None) -> str:
    """``--prefix`` as a workspace folder (``docs/``), or '' for the whole workspace."""
    if not raw:
        return ""
    value = unicodedata.normalize("NFC", raw)
    folder = value if value.endswith("/") else value + "/"
    if parse_path(folder, field="prefix", folder=True).store != "workspace":
        raise InvalidInput("prefix: a workspace folder such as docs/, not a URI", {"field": "prefix"})
    return folder


def workspace_files(services: Services, context: RequestContext, prefix: str) -> Iterator[FileEntry]:
    """Every file of the caller's workspace under ``prefix``, page after page of file_list."""
    cursor: str | None = None
    while True:
        page = services.files.list_files(context, FileListInput(path=prefix, limit=MAX_LIST, cursor=cursor))
        yield from page.entries
        if not page.has_more or not page.next_cursor:
            return
        cursor = page.next_cursor


def describe(context: RequestContext) -> str:
    """Whose workspace the caller reaches: the project's, or the user's own without a project."""
    if context.project is not None:
        return f"project {context.project}, tenant {context.tenant}"
    return f"user {context.user}, tenant {context.tenant}"


def _context_and_services() -> tuple[RequestContext, Services]:
    from mnemo.entry.identity import context_from_environment
    from mnemo.runtime import get_services

    return context_from_environment(os.environ), get_services()


def _failure(error: Exception) -> str:
    if isinstance(error, MnemoError):
        return f"{error.code}: {error.message}"
    return f"{type(error).__name__}: {error}"


# ----------------------------------------------------------------- push ---
@dataclass
class Planned:
    """A local file to write, with the workspace version it must replace (0: a new file)."""

    local: LocalFile
    expected: int  # the version the workspace holds (0: none)


def cmd_push(args: argparse.Namespace) -> int:
    """`mnemo workspace push DIR`: write each text file whose SHA-256 differs from the workspace's copy as its next
    version, with expectedVersion (a concurrent change is a conflict, never overwritten); ``--dry-run`` only lists. Exit
    status: 0, 1 when a write failed, 2 when DIR is no folder."""
    from mnemo.files.scopes import workspace_location

    root = Path(args.directory)
    if not root.is_dir():
        print(f"{root}: not a directory", file=sys.stderr)
        return 2
    try:
        prefix = check_prefix(args.prefix)
        context, services = _context_and_services()
        workspace_location(context, write=True)  # the writer role, before any work: each write checks it again
        remote = {entry.path: entry for entry in workspace_files(services, context, prefix)}
    except MnemoError as error:
        print(f"nothing pushed: {_failure(error)}", file=sys.stderr)
        return 1
    scan = scan_tree(root, prefix)
    plan: list[Planned] = []
    unchanged = 0
    for local in scan.files:
        entry = remote.get(local.name)
        if entry is not None and entry.sha256 == local.sha256:
            unchanged += 1
        else:
            plan.append(Planned(local, (entry.version or 0) if entry is not None else 0))
    for relative, why in scan.skipped:
        print(f"skipped {shown(relative)}: {why}")
    created = sum(1 for planned in plan if planned.expected == 0)
    changes = f"{created} new, {len(plan) - created} changed"
    where = describe(context)
    if args.dry_run:
        for planned in plan:
            print(f"would write {shown(planned.local.name)} ({'new' if planned.expected == 0 else 'changed'})")
        print(
            f"dry run: would push {len(plan)} files ({changes}), {unchanged} unchanged, "
            f"{len(scan.skipped)} skipped (workspace of {where})"
        )
        return 0
    failures = _write_all(services, context, plan)
    for name, why in failures:
        print(f"failed {shown(name)}: {why}", file=sys.stderr)
    print(
        f"pushed {len(plan) - len(failures)} files ({changes}), {unchanged} unchanged, "
        f"{len(scan.skipped)} skipped, {len(failures)} failed (workspace of {where})"
    )
    return 1 if failures else 0


def _write_all(services: Services, context: RequestContext, plan: list[Planned]) -> list[tuple[str, str]]:
    """Write each planned file as its next version; (name, why) of each that failed."""
    from pydantic import ValidationError

    failures: list[tuple[str, str]] = []
    progress = Progress("push", len(plan), sys.stderr, FILES)
    try:
        for done, planned in enumerate(plan, start=1):
            name = planned.local.name
            progress.update(done, shown(name))
            try:
                content, _ = load_text(planned.local.path)  # as it is now: it may have changed since the scan
                request = FileWriteInput(path=name, content=content, expected_version=planned.expected)
                services.files.write(context, request)
            except (Unfit, OSError, ValidationError) as error:
                failures.append((name, str(error) if isinstance(error, Unfit) else _failure(error)))
            except MnemoError as error:
                failures.append((name, _failure(error)))
                if isinstance(error, Unauthorized):  # the next writes would be refused the same way
                    failures += [(later.local.name, "not attempted") for later in plan[done:]]
                    break
    finally:
        progress.close()
    return failures


# ----------------------------------------------------------------- pull ---
def cmd_pull(args: argparse.Namespace) -> int:
    """`mnemo workspace pull DIR`: write every workspace file (under ``--prefix``) into DIR, skipping identical ones and
    never writing outside DIR. Exit status: 0, 1 when a file failed, 2 when DIR exists and is no folder."""
    root = Path(args.directory)
    if root.exists() and not root.is_dir():
        print(f"{root}: not a directory", file=sys.stderr)
        return 2
    try:
        prefix = check_prefix(args.prefix)
        context, services = _context_and_services()
        entries = list(workspace_files(services, context, prefix))
    except MnemoError as error:
        print(f"nothing pulled: {_failure(error)}", file=sys.stderr)
        return 1
    root.mkdir(parents=True, exist_ok=True)
    base = root.resolve()
    written = unchanged = 0
    failures: list[tuple[str, str]] = []
    progress = Progress("pull", len(entries), sys.stderr, FILES)
    try:
        for done, entry in enumerate(entries, start=1):
            progress.update(done, shown(entry.path))
            try:
                if _pull_one(services, context, base, prefix, entry):
                    written += 1
                else:
                    unchanged += 1
            except (MnemoError, OSError, Unfit) as error:
                failures.append((entry.path, str(error) if isinstance(error, Unfit) else _failure(error)))
    finally:
        progress.close()
    for name, why in failures:
        print(f"failed {shown(name)}: {why}", file=sys.stderr)
    print(
        f"pulled {written} files, {unchanged} unchanged, {len(failures)} failed "
        f"into {root} (workspace of {describe(context)})"
    )
    return 1 if failures else 0


def _pull_one(services: Services, context: RequestContext, base: Path, prefix: str, entry: FileEntry) -> bool:
    """Write one workspace file under ``base``; False when the local copy is already identical."""
    relative = entry.path.removeprefix(prefix)
    target = base.joinpath(*relative.split("/"))
    # Symbolic links under DIR are followed here: a name that would land outside DIR is refused.
    if not target.resolve().is_relative_to(base) or target.resolve() == base:
        raise Unfit(f"would be written outside {base} (through a symbolic link)")
    if target.is_dir() and not target.is_symlink():
        raise Unfit("a folder of that name is in the way")
    existing = target.read_bytes() if target.is_file() else None
    if existing is not None and entry.sha256 is not None and _sha256(existing) == entry.sha256:
        return False
    content: str = services.files.read_text(context, parse_path(entry.path)).content
    data = content.encode("utf-8")
    if existing == data:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.parent.resolve().is_relative_to(base):  # a link raced in while the folders were made
        raise Unfit(f"would be written outside {base} (through a symbolic link)")
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".mnemo-pull-")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return True


# -------------------------------------------------------------- parsers ---
_IDENTITY = """\
Identity comes from the environment, as for `mnemo call`: MNEMO_TENANT, MNEMO_USER,
MNEMO_PROJECT, MNEMO_ROLES (default: writer)... With MNEMO_PROJECT the workspace is
the project's (changing it needs the writer role); without it, the user's own.
MNEMO_DATA_DIR (or --data-dir) and the other MNEMO_* settings pick the stores, so
the same command works embedded and against DynamoDB + S3.
"""

_WORKSPACE = """\
Copy files between a local directory and the project workspace: the files that
file_read / file_write name by a relative path (src/auth.py), kept with every
version in the blob store (S3 on AWS, a directory when embedded).

  mnemo workspace push ./repo                 upload what changed
  mnemo workspace push ./docs --prefix docs   DIR/a.md becomes docs/a.md
  mnemo workspace pull ./copy                 write the workspace into ./copy
"""

_PUSH = """\
Upload the text files under DIR through file_write. Only files whose SHA-256
differs from the workspace's copy are written, each as its next version, with
expectedVersion set: a change someone made meanwhile is a CONFLICT, never
overwritten. Files missing from DIR are left in the workspace.

Skipped, and listed: hidden files and folders (.git, .mnemo, .venv...),
__pycache__, node_modules, symbolic links, files that are not UTF-8 text,
files over 1,000,000 characters, and names the path rules refuse (#, %, :, ?,
*, quotes, <, >, |, \\, a blank at either end of a segment...).

Progress goes to stderr (one updating line on a terminal, a line per file
otherwise); the report to stdout, failed writes to stderr.
Exit status: 0 when every file that could be written was (skips included),
1 when a write failed (each is listed with its error), 2 when DIR is no folder.
"""

_PULL = """\
Write every workspace file (or those under --prefix) into DIR, whole, creating
DIR and its folders. Files already identical are not rewritten; local files the
workspace does not have are never touched. Nothing is written outside DIR: a
name that would reach out of it (through a symbolic link) is refused and listed.
Exit status: 0 when every file was written or already current, 1 when one
failed (each is listed with its error), 2 when DIR exists and is no folder.
"""


def add_commands(commands: argparse._SubParsersAction) -> None:
    """Add the `workspace push|pull` parsers."""
    raw = argparse.RawDescriptionHelpFormatter
    workspace = commands.add_parser(
        "workspace",
        help="copy a directory to or from the project workspace (the file tools' relative paths)",
        description=_WORKSPACE,
        epilog=_IDENTITY,
        formatter_class=raw,
    )
    actions = workspace.add_subparsers(dest="action", required=True)

    push = actions.add_parser(
        "push",
        help="upload the changed text files under DIR, each as a new version",
        description=_PUSH,
        epilog=_IDENTITY,
        formatter_class=raw,
    )
    push.add_argument("directory", metavar="DIR", help="the local folder to upload")
    push.add_argument(
        "--prefix", metavar="P", help="workspace folder to push into: DIR/a.md becomes P/a.md (default: the root)"
    )
    push.add_argument("--dry-run", action="store_true", help="list what would be written and skipped; write nothing")
    push.add_argument("--data-dir", type=Path, help="the embedded stores' folder (MNEMO_DATA_DIR)")
    push.set_defaults(run=cmd_push)

    pull = actions.add_parser(
        "pull",
        help="write every workspace file (or those under --prefix) into DIR",
        description=_PULL,
        epilog=_IDENTITY,
        formatter_class=raw,
    )
    pull.add_argument("directory", metavar="DIR", help="the local folder to write into (created if missing)")
    pull.add_argument(
        "--prefix", metavar="P", help="only the workspace folder P: P/a.md is written to DIR/a.md (default: all)"
    )
    pull.add_argument("--data-dir", type=Path, help="the embedded stores' folder (MNEMO_DATA_DIR)")
    pull.set_defaults(run=cmd_pull)
