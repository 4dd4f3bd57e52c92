"""`manifest.json` of a skill pack: its schema, and reading it through the pack's boundary."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

import grse_graph
from grse_graph.errors import SkillError

from .boundary import Boundary, decode_utf8
from .library import SkillLibrary
from .limits import MAX_FOLDER_ENTRIES, MAX_MANIFEST_BYTES, MAX_NAME_CHARS, NAME_PATTERN
from .model import check_resource_path, validation_message
from .text import first_repeat, shown

MANIFEST_FILE = "manifest.json"
PACK_FORMAT: Literal["grse-skill-pack"] = "grse-skill-pack"
SHA256_PATTERN = r"^[0-9a-f]{64}$"
_Name = Field(pattern=NAME_PATTERN.pattern, max_length=MAX_NAME_CHARS)
_Entry = TypeVar("_Entry")


def _listed_once(what: str, key: Callable[[_Entry], str]) -> AfterValidator:
    """A list validator: no two entries share a key (the error names the smallest repeat)."""

    def check(entries: list[_Entry]) -> list[_Entry]:
        if (twice := first_repeat(key(entry) for entry in entries)) is not None:
            raise ValueError(f"{what} {twice!r} is listed twice")
        return entries

    return AfterValidator(check)


class PackSkillEntry(BaseModel):
    """One skill of a packed library and its content hash."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = _Name
    content_hash: str = Field(pattern=SHA256_PATTERN)


class PackAgentEntry(BaseModel):
    """One agent's library in a pack, plus any extra files of its folder (path -> sha256),
    such as an `AGENTS.md`; a file in the agent's folder that is not listed is an error,
    because that folder becomes the agent's filesystem root."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent: str = _Name
    limit: int | None = Field(default=None, ge=1, le=MAX_FOLDER_ENTRIES)
    library_hash: str = Field(pattern=SHA256_PATTERN)
    skills: Annotated[list[PackSkillEntry], _listed_once("skill", lambda entry: entry.name)]
    files: dict[str, str] = {}

    @field_validator("files")
    @classmethod
    def _valid_files(cls, value: dict[str, str]) -> dict[str, str]:
        for path, digest in value.items():
            check_resource_path(path)
            if path.split("/")[0] == "skills":
                raise ValueError(f"extra file {path!r} is inside the skills folder")
            if not re.fullmatch(SHA256_PATTERN, digest):
                raise ValueError(f"extra file {path!r}: hash is not a sha256 hex digest")
        return value


class PackManifest(BaseModel):
    """`manifest.json` of a skill pack."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["grse-skill-pack"] = PACK_FORMAT
    format_version: Literal[1] = 1
    grse_graph_version: str = Field(max_length=64)
    agents: Annotated[list[PackAgentEntry], _listed_once("agent", lambda entry: entry.agent)]

    @classmethod
    def describe(cls, libraries: Mapping[str, SkillLibrary]) -> PackManifest:
        """The manifest for these libraries (agents in sorted order)."""
        return cls(
            grse_graph_version=grse_graph.__version__,
            agents=[
                PackAgentEntry(
                    agent=agent,
                    limit=library.limit,
                    library_hash=library.content_hash(),
                    skills=[
                        PackSkillEntry(name=s.name, content_hash=s.content_hash())
                        for s in library.skills
                    ],
                )
                for agent, library in sorted(libraries.items())
            ],
        )

    def to_bytes(self) -> bytes:
        """The manifest as written to disk."""
        return (self.model_dump_json(indent=2) + "\n").encode("utf-8")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    for key in keys:
        if keys.count(key) > 1:
            raise ValueError(f"duplicate key {key!r}")
    return dict(pairs)


def read_manifest(pack: Path, boundary: Boundary | None = None) -> PackManifest:
    """The parsed and schema-checked manifest of the pack at `pack` (a one-line `SkillError`
    naming the file otherwise)."""
    boundary = boundary or Boundary(pack, "pack")
    path = pack / MANIFEST_FILE
    where = shown(path)
    if not boundary.exists(path):
        raise SkillError(f"{where}: missing (not a skill pack)")
    text = decode_utf8(boundary.read(path, MAX_MANIFEST_BYTES, MANIFEST_FILE), path)
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except RecursionError:
        raise SkillError(f"{where}: not valid JSON: nested too deeply") from None
    except ValueError as error:
        raise SkillError(shown(f"{where}: not valid JSON: {error}")) from None
    try:
        return PackManifest.model_validate(data)
    except ValidationError as error:
        raise SkillError(validation_message(error, where)) from None
