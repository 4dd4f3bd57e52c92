"""Where a training run keeps its LangGraph checkpoints: SQLite in the run folder, or PostgreSQL.

`grse train --checkpointer sqlite` (the default) keeps `RUN/checkpoints.sqlite`;
`--checkpointer postgres://USER@HOST:PORT/DB` keeps them in a PostgreSQL database (the
`postgres` extra: `langgraph-checkpoint-postgres` and `psycopg`). Many runs share one database,
so each run has its own thread id, recorded with the checkpointer's kind in `RUN/checkpointer.json`
(the DSN is stored without its password). Both savers give the same resume guarantees: a resumed
run continues its thread from the last checkpoint and re-runs only unfinished tasks.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import BaseModel, ConfigDict, ValidationError

from grse_graph.durable import atomic_write_text
from grse_graph.errors import ConfigError, GrseError
from grse_graph.validation_text import describe_validation_error

CheckpointerKind = Literal["sqlite", "postgres"]

SQLITE_FILE = "checkpoints.sqlite"
RECORD_FILE = "checkpointer.json"
SQLITE_THREAD_ID = "train"
"""The thread of a SQLite run: the database belongs to the run, so one fixed name suffices (and
runs written before `checkpointer.json` existed resume under it)."""

_POSTGRES_SCHEMES = ("postgres", "postgresql")


def project_serializer() -> JsonPlusSerializer:
    """The checkpoint serializer with an allowlist: LangGraph's safe types plus the project's
    values that can sit in a checkpoint (a team execution's state and records). Any other
    pickled-by-type object read back from a checkpoint stays a plain dict instead of being
    rebuilt (LangGraph warns that unlisted types will be blocked by default)."""
    from grse_graph.tasks.base import Passage, TaskQuestion
    from grse_graph.team import PresampledReply, Rollout, Step, StepUsage, TeamState, ToolCallRecord

    state_types = (TeamState, TaskQuestion, Passage, PresampledReply)
    record_types = (Rollout, Step, StepUsage, ToolCallRecord)
    return JsonPlusSerializer(allowed_msgpack_modules=[*state_types, *record_types])


class CheckpointerSpec(BaseModel):
    """A parsed `--checkpointer` value: `sqlite`, or a PostgreSQL DSN."""

    model_config = ConfigDict(frozen=True)

    kind: CheckpointerKind = "sqlite"
    dsn: str | None = None

    @classmethod
    def parse(cls, value: str) -> CheckpointerSpec:
        """`sqlite` or `postgres://...` / `postgresql://...`; anything else is a `ConfigError`."""
        text = value.strip()
        if text.lower() == "sqlite":
            return cls()
        if urlsplit(text).scheme.lower() in _POSTGRES_SCHEMES:
            return cls(kind="postgres", dsn=text)
        raise ConfigError(
            f"--checkpointer {value!r}: expected sqlite or a postgres://USER@HOST:PORT/DB DSN"
        )

    def redacted(self) -> str:
        """The spec as a user may see it: the DSN without its password."""
        if self.dsn is None:
            return self.kind
        parts = urlsplit(self.dsn)
        if parts.password is None:
            return self.dsn
        host = parts.hostname or ""
        netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
        return urlunsplit(parts._replace(netloc=netloc))


class CheckpointerRecord(BaseModel):
    """`RUN/checkpointer.json`: which saver holds the run's checkpoints, under which thread."""

    kind: CheckpointerKind
    thread_id: str
    dsn: str | None = None


def _read_record(path: Path) -> CheckpointerRecord | None:
    if not path.exists():
        return None
    try:
        return CheckpointerRecord.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError as error:
        raise ConfigError(
            f"{path}: not a checkpointer record ({describe_validation_error(error)})"
        ) from None


def resolve_run(
    spec: CheckpointerSpec | None, run_path: Path, *, resume: bool
) -> tuple[CheckpointerSpec, CheckpointerRecord]:
    """The saver and thread of a run, checked against what the folder holds.

    A new run refuses a folder that already holds one and gets a fresh thread id (PostgreSQL)
    or the fixed SQLite one; a resumed run must have checkpoints and keeps its thread. A resume
    without an explicit spec uses the recorded kind (and, for PostgreSQL, the recorded DSN,
    which carries no password: pass `--checkpointer` again when the server needs one).
    """
    sqlite_file = run_path / SQLITE_FILE
    record = _read_record(run_path / RECORD_FILE)
    if record is None and sqlite_file.exists():
        record = CheckpointerRecord(kind="sqlite", thread_id=SQLITE_THREAD_ID)
    if not resume:
        if record is not None:
            raise GrseError(
                f"{run_path}: already holds a run; use --resume {run_path} to continue it"
            )
        chosen = spec or CheckpointerSpec()
        thread = SQLITE_THREAD_ID if chosen.kind == "sqlite" else f"train-{uuid.uuid4()}"
        redacted = chosen.redacted() if chosen.dsn else None
        return chosen, CheckpointerRecord(kind=chosen.kind, thread_id=thread, dsn=redacted)
    if record is None:
        raise GrseError(f"{sqlite_file}: no checkpoints to resume from")
    if spec is not None and spec.kind != record.kind:
        raise ConfigError(
            f"{run_path}: its checkpoints are in {record.kind}, not {spec.kind}; "
            f"resume with --checkpointer {record.dsn or record.kind}"
        )
    if spec is None and record.dsn is not None and urlsplit(record.dsn).password is not None:
        raise ConfigError(
            f"{run_path}: its checkpoints are in {record.dsn}; resume with --checkpointer and "
            "the DSN with its password (it is not stored)"
        )
    chosen = spec or CheckpointerSpec(kind=record.kind, dsn=record.dsn)
    return chosen, record


@contextlib.asynccontextmanager
async def open_saver(spec: CheckpointerSpec, run_path: Path) -> AsyncIterator[BaseCheckpointSaver]:
    """An async checkpoint saver for `spec`, connected for the duration of the block.

    SQLite opens `RUN/checkpoints.sqlite` in autocommit mode: when a run dies mid-write (an
    exception cancels the loop's pending checkpoint writes) no transaction is left open on the
    abandoned connection, so a resumed run can write (it otherwise failed with "database is
    locked"). PostgreSQL connects with autocommit and dict rows, as the saver requires, and
    creates its tables on first use (`setup()` is idempotent).
    """
    if spec.kind == "sqlite":
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with aiosqlite.connect(run_path / SQLITE_FILE, isolation_level=None) as conn:
            yield AsyncSqliteSaver(conn, serde=project_serializer())
        return
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from psycopg import AsyncConnection, OperationalError
        from psycopg.rows import dict_row
    except ImportError:
        raise ConfigError(
            "--checkpointer postgres needs the postgres extra: pip install 'grse-graph[postgres]'"
        ) from None
    assert spec.dsn is not None
    try:
        connection = await AsyncConnection.connect(
            spec.dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row
        )
    except OperationalError as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ConfigError(f"--checkpointer {spec.redacted()}: cannot connect ({first})") from None
    async with connection:
        saver = AsyncPostgresSaver(connection, serde=project_serializer())
        await saver.setup()
        yield saver


@contextlib.asynccontextmanager
async def open_run_checkpointer(
    spec: CheckpointerSpec | None, run_path: Path, *, resume: bool
) -> AsyncIterator[tuple[BaseCheckpointSaver, str]]:
    """The saver and thread id of a training run (see `resolve_run`), with the folder created
    and `checkpointer.json` written once the saver is reachable."""
    chosen, record = resolve_run(spec, run_path, resume=resume)
    run_path.mkdir(parents=True, exist_ok=True)
    async with open_saver(chosen, run_path) as saver:
        atomic_write_text(run_path / RECORD_FILE, record.model_dump_json(indent=2) + "\n")
        yield saver, record.thread_id
