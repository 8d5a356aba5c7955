"""What a tool may touch on AWS, declared beside the tool, and what its function needs to run.

Every ``@tool`` names its ``Rights``: which actions of the records table, whether it embeds (Titan) or
extracts (the extraction model), what it does to the vector index, which objects of the bucket it
reaches and whether it sends extraction notices (the extraction queue). template.yaml's policies are generated from these declarations alone
(``mnemo_codegen.template_gen``): a function is granted exactly the union of what the tools it runs
declare, so a reviewer reads a tool's rights in one place, and the generator cannot grant more.

``Runtime`` holds what the tool's function needs beyond the template's Globals: a longer timeout, more
memory, a request deadline, the block budget setting.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

#: DynamoDB on the records table: reads only; reads and puts (no delete); reads, puts and deletes.
Records = Literal["read", "read-put", "read-write"]
#: The vector index: searches; searches and deletes; searches, deletes and writes (an index it may create).
IndexAccess = Literal["read", "delete", "write"]
#: Where in the bucket: the bucket itself (list), the knowledge files, every workspace's files.
BucketPlace = Literal["bucket", "knowledge", "workspace"]
#: The S3 actions a tool may be granted, in the order policies list them.
S3_ACTIONS = (
    "s3:ListBucket",
    "s3:ListBucketVersions",
    "s3:GetObject",
    "s3:GetObjectVersion",
    "s3:PutObject",
    "s3:DeleteObject",
    "s3:DeleteObjectVersion",
)
_RECORDS_ORDER: tuple[Records, ...] = ("read", "read-put", "read-write")
_INDEX_ORDER: tuple[IndexAccess, ...] = ("read", "delete", "write")


@dataclass(frozen=True)
class Grant:
    """One S3 action on one place of the knowledge bucket."""

    action: str
    place: BucketPlace

    def __post_init__(self) -> None:
        if self.action not in S3_ACTIONS:
            raise ValueError(f"unknown S3 action {self.action}; one of {', '.join(S3_ACTIONS)}")


#: The grants tools share: sync reads the current knowledge files, knowledge_show their versions, the file
#: tools read (at the version a head names), write and delete workspace files.
KNOWLEDGE_CURRENT = frozenset({Grant("s3:ListBucket", "bucket"), Grant("s3:GetObject", "knowledge")})
KNOWLEDGE_HISTORY = frozenset({Grant("s3:ListBucketVersions", "bucket"), Grant("s3:GetObjectVersion", "knowledge")})
WORKSPACE_READ = frozenset({Grant("s3:GetObjectVersion", "workspace")})
WORKSPACE_WRITE = frozenset({Grant("s3:PutObject", "workspace")})
WORKSPACE_DELETE = frozenset({Grant("s3:DeleteObject", "workspace")})
#: Erasing a user (erase_user): every version of their workspace files, delete markers included, goes for good.
WORKSPACE_PURGE = frozenset(
    {
        Grant("s3:ListBucket", "bucket"),
        Grant("s3:ListBucketVersions", "bucket"),
        Grant("s3:DeleteObject", "workspace"),
        Grant("s3:DeleteObjectVersion", "workspace"),
    }
)


@dataclass(frozen=True)
class Rights:
    """What one tool may do to the deployment's stores and models (nothing it does not declare)."""

    records: Records
    embeds: bool = False
    extracts: bool = False
    index: IndexAccess | None = None
    bucket: frozenset[Grant] = frozenset()
    #: Whether it announces stored turns to the extraction queue (sqs:SendMessage on the FIFO queue, and
    #: MNEMO_EXTRACTION_QUEUE_URL): the tools that store conversation turns.
    extraction_queue: bool = False
    #: Whether it scans the records table (dynamodb:Scan): only erase_user, which must find every partition of
    #: a user's agents and sessions, whose ids nothing else lists, and the extraction function's one-off repair
    #: pass. Every other tool reads by key and prefix.
    scans: bool = False

    def __post_init__(self) -> None:
        if self.records not in _RECORDS_ORDER:
            raise ValueError(f"records must be one of {', '.join(_RECORDS_ORDER)}")
        if self.index is not None and self.index not in _INDEX_ORDER:
            raise ValueError(f"index must be one of {', '.join(_INDEX_ORDER)}")
        if self.embeds and self.index is None:
            raise ValueError("a tool that embeds does so for the vector index: declare its index access")

    @property
    def writes_records(self) -> bool:
        """Whether the tool changes the records table at all."""
        return self.records != "read"

    def union(self, other: Rights) -> Rights:
        """The least rights that cover both: what a function running both tools needs."""
        index = max((self.index, other.index), key=lambda found: -1 if found is None else _INDEX_ORDER.index(found))
        return Rights(
            records=max(self.records, other.records, key=_RECORDS_ORDER.index),
            embeds=self.embeds or other.embeds,
            extracts=self.extracts or other.extracts,
            index=index,
            bucket=self.bucket | other.bucket,
            extraction_queue=self.extraction_queue or other.extraction_queue,
            scans=self.scans or other.scans,
        )

    @staticmethod
    def covering(rights: Iterable[Rights]) -> Rights:
        """The union of several tools' rights (reads only, when there are none)."""
        total = Rights(records="read")
        for each in rights:
            total = total.union(each)
        return total


@dataclass(frozen=True)
class Runtime:
    """What a tool's function needs beyond the template's Globals.

    ``timeout`` and ``memory`` are the function's seconds and megabytes; ``deadline`` is the request
    deadline the service keeps (``MNEMO_REQUEST_DEADLINE_SECONDS``), below API Gateway's 29 s integration
    limit; ``block_budget`` passes the BlockBudgetTokens parameter (``MNEMO_BLOCK_BUDGET_TOKENS``).
    """

    timeout: int | None = None
    memory: int | None = None
    deadline: int | None = None
    block_budget: bool = False

    def __post_init__(self) -> None:
        if self.deadline is not None and (self.timeout is None or self.deadline >= self.timeout):
            raise ValueError("a request deadline must end before the function's timeout")
