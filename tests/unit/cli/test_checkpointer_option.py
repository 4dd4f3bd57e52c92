"""`--checkpointer sqlite|postgres://...`: parsing, redaction and which thread a run uses."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from grse_graph.checkpointing import (
    RECORD_FILE,
    SQLITE_FILE,
    CheckpointerRecord,
    CheckpointerSpec,
    open_run_checkpointer,
    resolve_run,
)
from grse_graph.errors import ConfigError, GrseError


def test_parse_accepts_sqlite_and_postgres_dsns_only() -> None:
    assert CheckpointerSpec.parse("sqlite") == CheckpointerSpec()
    spec = CheckpointerSpec.parse("postgresql://u:pw@db:5432/grse")
    assert spec.kind == "postgres" and spec.dsn == "postgresql://u:pw@db:5432/grse"
    assert CheckpointerSpec.parse("postgres://db/grse").kind == "postgres"
    with pytest.raises(ConfigError, match="expected sqlite or a postgres://"):
        CheckpointerSpec.parse("mysql://db/grse")


def test_redacted_hides_the_password_only() -> None:
    spec = CheckpointerSpec.parse("postgresql://u:pw@db:5432/grse?sslmode=require")
    assert spec.redacted() == "postgresql://u:***@db:5432/grse?sslmode=require"
    assert CheckpointerSpec.parse("postgresql://u@db/grse").redacted() == "postgresql://u@db/grse"


def test_new_runs_get_their_own_thread_and_resumes_keep_it(tmp_path: Path) -> None:
    spec = CheckpointerSpec.parse("postgresql://u:pw@db/grse")
    chosen, first = resolve_run(spec, tmp_path / "a", resume=False)
    _, second = resolve_run(spec, tmp_path / "b", resume=False)
    assert chosen == spec and first.thread_id != second.thread_id
    assert first.dsn == "postgresql://u:***@db/grse"  # never the password on disk
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / RECORD_FILE).write_text(first.model_dump_json())
    with pytest.raises(ConfigError, match="with its password"):
        resolve_run(None, tmp_path / "a", resume=True)  # the stored DSN has no password
    resumed_spec, resumed = resolve_run(spec, tmp_path / "a", resume=True)
    assert resumed.thread_id == first.thread_id and resumed_spec == spec
    with pytest.raises(GrseError, match="already holds a run"):
        resolve_run(spec, tmp_path / "a", resume=False)


def test_a_sqlite_run_from_before_the_record_resumes_under_its_old_thread(tmp_path: Path) -> None:
    (tmp_path / SQLITE_FILE).write_bytes(b"")
    spec, record = resolve_run(None, tmp_path, resume=True)
    assert spec.kind == "sqlite" and record.thread_id == "train"
    with pytest.raises(GrseError, match="no checkpoints to resume from"):
        resolve_run(None, tmp_path / "empty", resume=True)


def test_sqlite_saver_lives_in_the_run_folder(tmp_path: Path) -> None:
    async def open_and_close() -> str:
        async with open_run_checkpointer(None, tmp_path / "run", resume=False) as (_, thread):
            return thread

    assert asyncio.run(open_and_close()) == "train"
    assert (tmp_path / "run" / SQLITE_FILE).exists()
    record = CheckpointerRecord.model_validate_json((tmp_path / "run" / RECORD_FILE).read_text())
    assert record.kind == "sqlite"


def test_checkpoint_serializer_rebuilds_project_types_only() -> None:
    from pydantic import BaseModel

    from grse_graph.checkpointing import project_serializer
    from grse_graph.tasks.base import TaskQuestion
    from grse_graph.team import Rollout, Step

    class Unlisted(BaseModel):
        value: int = 1

    serde = project_serializer()
    rollout = Rollout(
        rollout_id="r",
        question_id="q",
        steps=[Step(index=0, agent="a", system_prompt="s", input="i", output="o")],
    )
    question = TaskQuestion(id="q", question="?", answer="!")
    assert serde.loads_typed(serde.dumps_typed(rollout)) == rollout
    assert serde.loads_typed(serde.dumps_typed(question)) == question
    assert serde.loads_typed(serde.dumps_typed(Unlisted())) == {"value": 1}
