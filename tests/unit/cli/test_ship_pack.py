"""Shipping in one command: `grse train --init-pack/--export`, `grse skills export RUN PACK`,
and the exported pack loaded into deepagents' `create_deep_agent` and into `create_agent` with
`SkillLibraryMiddleware`, every skill folder valid for `skills-ref`. Training runs through the
real client path against the fake OpenAI server; the agents run on scripted chat models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import skills_ref
from deepagents import create_deep_agent
from deepagents.backends import FilesystemBackend
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from typer.testing import CliRunner

from grse_graph.cli import build_app
from grse_graph.errors import GrseError
from grse_graph.integrations import SkillLibraryMiddleware
from grse_graph.skills import Skill, SkillLibrary, export_pack, import_pack
from tests.fakes import ScriptedChatModel, tool_call_message
from tests.fakeserver import FakeOpenAIServer

runner = CliRunner()
SEED_SKILL = Skill.build(
    name="check-units",
    description="Check the unit of every number in the question before answering.",
    body="Write each number with its unit; convert before comparing.",
    metadata={"grse-utility": "0.5"},
)


def _seed_pack(folder: Path) -> Path:
    return export_pack({"reasoner": SkillLibrary.build("reasoner", [SEED_SKILL], 4)}, folder)


def _config(tmp_path: Path, server: FakeOpenAIServer) -> Path:
    config = tmp_path / "grse.toml"
    config.write_text(
        "".join(
            f'[{role}]\nbase_url = "{server.base_url(role)}"\nmodel = "fake"\n'
            for role in ("actor", "critic", "optimizer")
        )
        + '[engine]\nengine = "llama-server"\nllama_server_path = "/nonexistent/llama-server"\n'
        + '[train]\ntask = "demo"\niterations = 1\nbatch_size = 1\nvalidation_size = 1\n'
        + "group_size = 2\nconcurrency = 1\n",
        encoding="utf-8",
    )
    return config


def _train(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    with FakeOpenAIServer() as server:
        config = _config(tmp_path, server)
        result = runner.invoke(build_app(), ["train", "--config", str(config), *args])
    return result.exit_code, result.stdout, result.stderr


def _refusal(tmp_path: Path, *args: str) -> str:
    """The one-line error `grse train` stops with (the `grse` entry point prints it)."""
    with FakeOpenAIServer() as server:
        config = _config(tmp_path, server)
        result = runner.invoke(build_app(), ["train", "--config", str(config), *args])
        assert server.records == [], "refused before any model call"
    assert isinstance(result.exception, GrseError), result.output
    message = str(result.exception)
    assert "\n" not in message
    return message


def _skill_files(pack: Path) -> list[Path]:
    return sorted(pack.glob("*/skills/*/SKILL.md"))


def test_train_starts_from_a_pack_and_exports_the_final_libraries(tmp_path: Path) -> None:
    seed, run, shipped = _seed_pack(tmp_path / "seed"), tmp_path / "run", tmp_path / "shipped"
    code, stdout, stderr = _train(
        tmp_path,
        *("--out", str(run), "--init-pack", str(seed)),
        *("--export", str(shipped), "--no-bookkeeping", "--json"),
    )
    assert code == 0, stderr
    started = run / "libraries" / "iter_0" / "reasoner" / "check-units" / "SKILL.md"
    assert "Write each number with its unit" in started.read_text(encoding="utf-8")
    assert json.loads(stdout)["pack"] == str(shipped)
    libraries = import_pack(shipped)
    assert sorted(libraries) == ["reasoner", "retriever"]
    assert _skill_files(shipped), "the reasoner's skills reach the pack"
    assert all("grse-" not in f.read_text(encoding="utf-8") for f in _skill_files(shipped))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--no-bookkeeping"], "--no-bookkeeping: only with --export PACK"),
        (["--init-library", "reasoner={lib}"], "is also given by --init-library"),
        (["--export", "{lib}"], "refusing to overwrite"),
    ],
)
def test_train_refuses_pack_options_before_training(
    tmp_path: Path, extra: list[str], message: str
) -> None:
    seed = _seed_pack(tmp_path / "seed")
    lib = tmp_path / "lib"
    (lib / "notes").mkdir(parents=True)
    (lib / "notes" / "keep.txt").write_text("mine", encoding="utf-8")
    args = [a.format(lib=lib) for a in extra]
    assert message in _refusal(tmp_path, "--init-pack", str(seed), *args)
    assert not (tmp_path / "runs").exists()
    assert (lib / "notes" / "keep.txt").read_text(encoding="utf-8") == "mine"


def test_train_refuses_a_pack_agent_the_team_does_not_have(tmp_path: Path) -> None:
    seed = export_pack({"planner": SkillLibrary.build("planner", [SEED_SKILL], 4)}, tmp_path / "p")
    refusal = _refusal(tmp_path, "--init-pack", str(seed))
    assert "agent 'planner' is not in the team (agents: retriever, reasoner)" in refusal


@pytest.fixture(scope="module")
def shipped_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run trained from the seed pack, exported with the one `grse skills export` command."""
    tmp_path = tmp_path_factory.mktemp("ship")
    run = tmp_path / "run"
    code, _, stderr = _train(
        tmp_path, "--out", str(run), "--init-pack", str(_seed_pack(tmp_path / "seed"))
    )
    assert code == 0, stderr
    pack = tmp_path / "pack"
    result = runner.invoke(build_app(), ["skills", "export", str(run), str(pack)])
    assert result.exit_code == 0, result.output
    assert f"wrote {pack}" in result.stdout
    return pack


def _reasoner_skill(pack: Path) -> Skill:
    skills = import_pack(pack)["reasoner"].skills
    assert skills, "the trained reasoner keeps a skill"
    return skills[0]


def _system_text(messages: list) -> str:
    return "\n".join(m.text for m in messages if isinstance(m, SystemMessage))


def test_the_exported_pack_loads_into_create_deep_agent(shipped_pack: Path) -> None:
    skill = _reasoner_skill(shipped_pack)
    path = f"/skills/{skill.name}/SKILL.md"
    model = ScriptedChatModel([tool_call_message("read_file", {"file_path": path}), "done"])
    agent = create_deep_agent(
        model,
        backend=FilesystemBackend(root_dir=shipped_pack / "reasoner", virtual_mode=True),
        skills=["/skills/"],
    )
    agent.invoke({"messages": [HumanMessage("How far is 3 km in m?")]})
    listed = _system_text(model.calls[0])
    assert skill.name in listed and skill.description in listed
    read = [m for m in model.calls[1] if isinstance(m, ToolMessage)][-1]
    assert skill.body.strip().splitlines()[0] in read.text


def test_the_exported_pack_loads_into_create_agent_with_the_middleware(
    shipped_pack: Path,
) -> None:
    skill = _reasoner_skill(shipped_pack)
    skills = SkillLibraryMiddleware(import_pack(shipped_pack)["reasoner"], mode="path")
    path = f"/skills/{skill.name}/SKILL.md"
    model = ScriptedChatModel([tool_call_message("read_file", {"file_path": path}), "done"])
    agent = create_agent(model, system_prompt="You answer questions.", middleware=[skills])
    out = agent.invoke({"messages": [HumanMessage("How far is 3 km in m?")]})
    listed = _system_text(model.calls[0])
    assert "You answer questions." in listed
    assert skill.name in listed and skill.description in listed
    read = [m for m in model.calls[1] if isinstance(m, ToolMessage)][-1]
    assert skill.body.strip().splitlines()[0] in read.text
    assert out["grse_skills_used"] == [skill.name]
    assert skills.recorder.skills_used() == [skill.name]


def test_every_skill_of_the_exported_pack_passes_skills_ref(shipped_pack: Path) -> None:
    folders = [f.parent for f in _skill_files(shipped_pack)]
    assert folders
    # Exported with the bookkeeping (the default): skills-ref accepts the grse-* metadata too.
    assert any("grse-" in (f / "SKILL.md").read_text(encoding="utf-8") for f in folders)
    assert {str(folder): skills_ref.validate(folder) for folder in folders} == {
        str(folder): [] for folder in folders
    }


def test_training_can_disclose_skills_the_way_a_pack_is_deployed(tmp_path: Path) -> None:
    run = tmp_path / "run"
    seed = _seed_pack(tmp_path / "seed")
    args = ("--out", str(run), "--init-pack", str(seed), "--skill-mode", "path")
    code, _, stderr = _train(tmp_path, *args)
    assert code == 0, stderr
    assert json.loads((run / "config.json").read_text(encoding="utf-8"))["skill_mode"] == "path"
    rollouts = (run / "rollouts.jsonl").read_text(encoding="utf-8")
    assert "/skills/check-units/SKILL.md" in rollouts and "read_file" in rollouts
