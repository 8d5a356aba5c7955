"""One settings model, read from ``MNEMO_*`` environment variables.

Each port picks its adapter independently; with nothing set, every port uses
the embedded default, so ``mnemo serve`` runs on a laptop with no cloud at all.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True)

    data_dir: Path = Path(".mnemo")
    records: Literal["sqlite"] = "sqlite"
    vector_index: Literal["local"] = "local"
    embedder: Literal["bge", "hashing"] = "bge"
    hashing_dimensions: int = Field(256, ge=16, le=4096)

    #: Cosine similarity at which memory_add treats new content as a duplicate.
    dedupe_similarity: float = Field(0.95, ge=0.0, le=1.0)
    #: Roles granted to a local-server caller that sends no X-Mnemo-Roles header.
    default_local_roles: tuple[str, ...] = ("writer",)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        for name in cls.model_fields:
            raw = env.get(f"MNEMO_{name.upper()}")
            if raw is None:
                continue
            if name == "default_local_roles":
                values[name] = tuple(role.strip() for role in raw.split(",") if role.strip())
            else:
                values[name] = raw
        return cls.model_validate(values)

    @property
    def sqlite_path(self) -> Path:
        return self.data_dir / "mnemo.sqlite3"
