"""IAM callers: which principal an ARN names, and when two ARNs name the same role.

API Gateway hands over the SigV4 caller's ARN (REST ``requestContext.identity.userArn``, HTTP API
``requestContext.authorizer.iam.userArn``). Three forms matter:

- ``arn:<partition>:sts::<account>:assumed-role/<Name>/<session>``: a role's session (an ECS task, a
  Lambda, an instance). It stands for its role, ``arn:<partition>:iam::<account>:role/<Name>``, so every
  session of one role is one caller. The session ARN carries no role path, so neither does the result.
- ``arn:<partition>:iam::<account>:user/[<path>/]<name>``: an IAM user, kept as it is.
- anything else IAM or STS signs for (``root``, ``federated-user/...``): kept as it is.

A role is identified by partition, account and name: IAM role names are unique in an account, so a
role path (``role/team/AgentRole``) never makes another role, and ``AgentRole`` is not ``AgentRole2``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: ``arn:<partition>:<iam|sts>::<account>:<resource>``; partitions are ``aws``, ``aws-cn``, ``aws-us-gov``...
_ARN = re.compile(r"arn:(?P<partition>aws(?:-[a-z]+)*):(?P<service>iam|sts)::(?P<account>\d{12}):(?P<resource>.+)")
#: IAM's own rule for role and session names.
_NAME = r"[\w+=,.@-]{1,128}"
_ASSUMED = re.compile(rf"assumed-role/(?P<name>{_NAME})/(?P<session>{_NAME})")
#: IAM would allow any printable ASCII in a path; a listed role's path is held to name characters, so that a
#: list joined with ``;`` or a pasted policy fragment is refused rather than read as one odd path.
_ROLE = re.compile(rf"role/(?:{_NAME}/)*(?P<name>{_NAME})")


@dataclass(frozen=True)
class RoleKey:
    """What makes a role that role: partition, account and name (never its path)."""

    partition: str
    account: str
    name: str

    @property
    def arn(self) -> str:
        return f"arn:{self.partition}:iam::{self.account}:role/{self.name}"


@dataclass(frozen=True)
class Caller:
    """A SigV4 caller: its account (the tenant), the user id it maps to, and its role if it is one."""

    account: str
    user: str
    role: RoleKey | None


def caller_from_arn(arn: str) -> Caller | None:
    """The caller an ARN names, or None when it is not an IAM or STS principal ARN."""
    match = _ARN.fullmatch(arn)
    if match is None:
        return None
    partition, service, account, resource = match.group("partition", "service", "account", "resource")
    if service == "sts" and (assumed := _ASSUMED.fullmatch(resource)):
        role = RoleKey(partition, account, assumed.group("name"))
        return Caller(account, role.arn, role)
    return Caller(account, arn, None)


def role_from_arn(arn: str) -> RoleKey | None:
    """The role an IAM role ARN (``arn:aws:iam::<account>:role/[<path>/]<Name>``) names, or None."""
    match = _ARN.fullmatch(arn)
    if match is None or match.group("service") != "iam":
        return None
    role = _ROLE.fullmatch(match.group("resource"))
    if role is None:
        return None
    return RoleKey(match.group("partition"), match.group("account"), role.group("name"))
