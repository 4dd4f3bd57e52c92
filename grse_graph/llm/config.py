"""Configuration of the model roles and of the embedded engine.

Values come from four layers, highest first: explicit overrides (CLI flags), environment
variables (prefix ``GRSE_``), a TOML file, and the defaults below, which point every role at the
embedded local engine. `load_config` merges the layers and reports the first bad value as a
one-line `ConfigError` naming the key and where it came from.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from grse_graph.errors import ConfigError
from grse_graph.llm.provider import ROLES, RoleName
from grse_graph.validation_text import Location, describe_validation_error

ENGINE_MODEL_ALIAS = "grse-local"
"""The name the embedded engine serves its model under (any name is accepted by both engines)."""

EngineName = Literal["auto", "xllamacpp", "llama-server"]

StructuredMethod = Literal[
    "function_calling",
    "json_prompt",
    "json_object",
    "json_object_schema",
    "json_schema",
    "json_grammar",
]
"""How `grse_graph.llm.structured.structured_call` gets a schema object from a role's model
(the methods are described in `grse_graph.llm.structured`)."""

StructuredMethodSetting = Literal[StructuredMethod, "auto"]
"""A role's `StructuredMethod`, or ``auto``: chosen by the engine (see `RoleSettings`)."""

ThinkingMode = Literal["auto", "off", "on"]
"""Whether a role asks the server to disable the chat template's thinking mode (see
`RoleSettings.thinking`)."""

ToolTranscriptSetting = Literal["auto", "native", "text"]
"""How a role's agents send tool results and get text answers (see
`grse_graph.llm.tool_transcript`)."""

ForcedCallSetting = Literal["auto", "tool_choice", "json_schema"]
"""How a role's server is asked for a required tool call (see `RoleSettings.forced_call`)."""

SchemaNarrowing = Literal["per_agent", "flat", "off"]
"""How a critic's schema is narrowed to the names of its unit (see
`RoleSettings.schema_narrowing`)."""

_EMBEDDED_MARKERS = frozenset({"", "embedded", "local"})


class ModelPreset(BaseModel):
    """Sampling facts of a model family: the paper's training top-k and whether its chat
    template has a thinking mode (switched with ``enable_thinking``)."""

    model_config = ConfigDict(frozen=True)

    family: str
    top_k: int = Field(ge=1)
    has_thinking: bool = False


# Ordered: the first family whose marker is in the lower-cased model name wins ("qwen3" before
# "qwen"). Top-k 20 for Qwen and 64 for Gemma are the paper's (App. A).
MODEL_PRESETS: tuple[tuple[str, ModelPreset], ...] = (
    ("qwen3", ModelPreset(family="qwen3", top_k=20, has_thinking=True)),
    ("qwq", ModelPreset(family="qwq", top_k=20, has_thinking=True)),
    ("qwen", ModelPreset(family="qwen", top_k=20)),
    ("gemma", ModelPreset(family="gemma", top_k=64)),
)
DEFAULT_TRAINING_TOP_K = 20
"""Training top-k for a model of no known family (the paper's Qwen value)."""

# The embedded engine's named models and the family each belongs to.
_ENGINE_MODEL_FAMILIES: dict[str, str] = {
    "default": "qwen2.5-coder-0.5b",
    "medium": "qwen2.5-coder-1.5b",
    "small": "smollm2-135m",
}


def model_preset(model_name: str) -> ModelPreset | None:
    """The preset of the family a model name belongs to (None: no known family)."""
    lowered = model_name.lower()
    for marker, preset in MODEL_PRESETS:
        if marker in lowered:
            return preset
    return None


class RoleSettings(BaseModel):
    """Endpoint and default decoding settings of one role.

    ``base_url`` None means the embedded local engine. ``top_k`` is not an OpenAI parameter and
    is sent in ``extra_body`` (vLLM and llama.cpp both read it there). ``ChatOpenAI`` sends the
    cap as ``max_completion_tokens``, which some servers ignore, so by default it is also sent
    as ``max_tokens`` (``legacy_max_tokens``); switch that off for an API that rejects both
    fields.

    ``structured_method`` chooses how structured output is obtained. ``auto`` (the default)
    picks ``json_schema`` on the embedded engine (llama.cpp's server constrains the reply to
    the schema; its function calling returned the JSON as text without the fields, issue 10)
    and ``function_calling`` on a remote endpoint. ``function_calling`` forces a call of a
    function whose parameters are the schema; every supported server accepts it.
    ``json_prompt`` instead asks in plain text for one JSON object matching the schema and
    parses and validates the reply (same single repair round): no grammar sampling, at the
    price of an unconstrained model sometimes writing invalid JSON. ``json_object`` (a generic
    JSON grammar, the schema in the prompt), ``json_object_schema`` (the schema inside
    ``response_format``'s json_object), ``json_schema`` and ``json_grammar`` (the schema's
    grammar with no schema text in the prompt) are the engine-constrained alternatives;
    ``benchmarks/structured.py`` measures them all. Set it per role in TOML (``[critic]
    structured_method = "json_prompt"``) or the environment
    (``GRSE_CRITIC_STRUCTURED_METHOD=json_prompt``). ``structured_stream`` streams structured
    replies and stops one whose tail keeps repeating (a loop inside the grammar) after a few
    copies instead of at the cap; the stop is a failed attempt that goes to the repair round. It
    is off by default because the fault-test server does not stream.

    ``schema_narrowing``: where the structured method has the engine enforce the schema, a
    caller may send a schema narrowed to the names valid for this request (the critics' agent,
    skill and step enums). ``per_agent`` (the default) gives every agent its own variant, so a
    step or skill can only be cited with its own agent; ``flat`` lists each name once over the
    union of the group's agents (a schema about a third shorter); ``off`` sends the plain one.
    Measured on the embedded 0.5B model (`benchmarks/iteration.py`, demo, 2 groups): with the
    plain schema the critic named speakers and "Agent 1" as agents, with the flat one it cited
    the reasoner's steps for the retriever, and in both runs every diagnosis was dropped by the
    checks after the repair round; with per-agent variants they were accepted.

    ``tool_transcript``: how an agent's tool results reach the model and how its text answer
    is asked for (`grse_graph.llm.tool_transcript`): ``native`` tool messages, or ``text``
    (results as user messages, answers from a tool-free call) for a server whose chat template
    drops tool messages. ``auto`` (the default) is ``native``.

    ``forced_call``: how a required tool call (a delegating agent's first call, the
    ``function_calling`` structured method) is asked for: ``tool_choice`` as OpenAI spells it,
    or ``json_schema``, the call's name and arguments as a JSON schema the server enforces, for
    llama.cpp's server, which rejects a named choice and answers "required" in prose with
    templates that have no tools (SmolLM2, Qwen2.5-Coder). ``auto`` (the default) is
    ``json_schema`` on the embedded engine and ``tool_choice`` elsewhere: set ``json_schema``
    for your own llama-server.

    ``affinity_headers``: the headers that carry the unit of work's affinity key on every
    request (`grse_graph.llm.affinity`), for a router over replicas that hashes one of them:
    ``X-Session-ID`` (vLLM's router, the default), ``X-SMG-Routing-Key`` (SGLang's smg); empty
    sends none.

    ``engine_model`` gives an embedded role its own model (``default``, ``medium``, ``small`` or
    a ``.gguf`` path) instead of ``[engine] model``: a second engine with the same engine
    settings serves it (for example the critic and optimizer on ``medium`` beside a ``default``
    actor). The engines take turns, since the training stages that use them run one after
    another.

    ``thinking`` is the switch for models whose chat template has a thinking mode (Qwen3):
    "auto" disables it, as in the paper, when the model's family is known to have one
    (`model_preset`); "off" / "on" force it (see `chat_template_kwargs`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str | None = None
    model: str = ENGINE_MODEL_ALIAS
    api_key_env: str | None = None
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    top_k: int | None = Field(default=None, ge=1)
    max_tokens: int = Field(default=4096, ge=1)
    timeout_s: float = Field(default=600.0, gt=0.0)
    max_retries: int = Field(default=2, ge=0)
    concurrency: int = Field(default=4, ge=1)
    legacy_max_tokens: bool = True
    structured_method: StructuredMethodSetting = "auto"
    structured_stream: bool = False
    thinking: ThinkingMode = "auto"
    engine_model: str | None = None
    schema_narrowing: SchemaNarrowing = "per_agent"
    tool_transcript: ToolTranscriptSetting = "auto"
    forced_call: ForcedCallSetting = "auto"
    affinity_headers: list[str] = Field(default_factory=lambda: ["X-Session-ID"])

    @field_validator("affinity_headers", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        # From the environment: GRSE_CRITIC_AFFINITY_HEADERS="X-SMG-Routing-Key,X-Session-ID".
        if isinstance(value, str):
            return [name.strip() for name in value.split(",") if name.strip()]
        return value

    @property
    def embedded(self) -> bool:
        """True when this role talks to the embedded engine."""
        return self.base_url is None

    def chat_template_kwargs(self, model_name: str) -> dict[str, Any] | None:
        """What to send as ``chat_template_kwargs`` for the thinking switch, or None.

        ``thinking`` "auto" disables thinking (as the paper did) on a model whose family has a
        thinking mode and sends nothing otherwise, since strict APIs reject unknown fields;
        "off" / "on" always send ``enable_thinking`` false / true (for a served model whose
        name does not reveal its family). ``model_name`` is the name the family is read from.
        """
        if self.thinking == "auto":
            preset = model_preset(model_name)
            return {"enable_thinking": False} if preset and preset.has_thinking else None
        return {"enable_thinking": self.thinking == "on"}


def default_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$GRSE_CACHE_DIR`` if set, else ``~/.cache/grse-graph``."""
    source = os.environ if env is None else env
    configured = source.get("GRSE_CACHE_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "grse-graph"


class EngineSettings(BaseModel):
    """How to run the embedded engine (llama.cpp's server; see `grse_graph.llm.engine`).

    ``model`` is ``default`` (Qwen2.5-Coder-0.5B), ``small`` (SmolLM2-135M), ``medium``
    (Qwen2.5-Coder-1.5B) or a path to a ``.gguf`` file. ``engine``: ``xllamacpp`` (the server
    from the prebuilt wheel of the ``local`` extra), ``llama-server`` (a binary: the
    configured ``llama_server_path`` or one on PATH) or ``auto`` (the binary when a path is
    configured, else xllamacpp). ``port`` 0 picks a free loopback port. ``n_ctx`` is the
    context per slot. ``n_parallel`` is the number of slots, each keeping one prompt prefix
    cached; each agent's prefix is pinned to one (`grse_graph.llm.slot_pinning`). The default
    6 holds the demo team's five prefixes (multi-hop retriever and reasoner, memory retriever
    with and without its grep tool, memory reasoner): with 4 the least recently used one was
    always the next one needed, so every question recomputed its prefixes. ``threads`` None
    means one per CPU core. ``allow_amx`` False keeps ggml off Intel AMX kernels (some virtual
    machines advertise AMX but fault on it; see `grse_graph.llm.childproc`).
    ``flash_attention``: llama.cpp's fused attention kernel, off: on these 2-core CPUs it reads
    a prompt about 10% faster but generated at half the speed (llama-server, 0.5B, issue 10:
    8.5 against 16.9 tok/s), and the server's own default (``auto``) turns it on.
    ``repeatable_prompts``: prime each chat request's slot and run one request at a time, so a
    greedy request answers the same way whatever the server served before it and whatever
    else was asked at once (`grse_graph.llm.slot_pinning`); off, the server batches requests.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = "default"
    engine: EngineName = "auto"
    llama_server_path: Path | None = None
    n_ctx: int = Field(default=8192, ge=256)
    threads: int | None = Field(default=None, ge=1)
    n_parallel: int = Field(default=6, ge=1)
    host: str = "127.0.0.1"
    port: int = Field(default=0, ge=0, le=65535)
    cache_dir: Path = Field(default_factory=default_cache_dir)
    startup_timeout_s: float = Field(default=180.0, gt=0.0)
    allow_amx: bool = False
    flash_attention: bool = False
    repeatable_prompts: bool = True

    def resolved_threads(self) -> int:
        """The thread count to start the engine with."""
        return self.threads or os.cpu_count() or 1


class LLMConfig(BaseModel):
    """The three roles and the embedded engine. Defaults: everything on the embedded engine,
    with the paper's generation caps (actor 4,096, critic 4,000, optimizer 1,200 tokens)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    actor: RoleSettings = Field(default_factory=lambda: RoleSettings(max_tokens=4096))
    critic: RoleSettings = Field(default_factory=lambda: RoleSettings(max_tokens=4000))
    optimizer: RoleSettings = Field(default_factory=lambda: RoleSettings(max_tokens=1200))
    engine: EngineSettings = Field(default_factory=EngineSettings)

    def role(self, role: RoleName) -> RoleSettings:
        """Settings of one role."""
        settings: RoleSettings = getattr(self, role)
        return settings

    def uses_embedded_engine(self) -> bool:
        """True when at least one role needs the embedded engine."""
        return any(self.role(role).embedded for role in ROLES)

    def embedded_model(self, role: RoleName) -> str:
        """The embedded engine model an embedded role runs on (its ``engine_model`` or the
        engine's)."""
        return self.role(role).engine_model or self.engine.model

    def embedded_models(self) -> list[str]:
        """The distinct models of the embedded roles, the actor's (or the engine's) first: one
        engine is started per model."""
        models = [self.engine.model] if self.role("actor").embedded else []
        for role in ROLES:
            if self.role(role).embedded and self.embedded_model(role) not in models:
                models.append(self.embedded_model(role))
        return models

    def model_name(self, role: RoleName) -> str:
        """The name a role's model family is read from: the served model name on a remote
        endpoint; on the embedded engine the engine model (its named models map to their
        families, a .gguf path is read as is)."""
        settings = self.role(role)
        if not settings.embedded:
            return settings.model
        model = self.embedded_model(role)
        return _ENGINE_MODEL_FAMILIES.get(model, model)

    def training_top_k(self) -> int:
        """The paper's training top-k for the actor's model family (20 Qwen, 64 Gemma)."""
        preset = model_preset(self.model_name("actor"))
        return preset.top_k if preset is not None else DEFAULT_TRAINING_TOP_K


_SECTIONS: dict[str, type[BaseModel]] = {
    **{role: RoleSettings for role in ROLES},
    "engine": EngineSettings,
}
OTHER_SECTIONS = frozenset({"train"})
"""Tables of the same grse TOML file that other commands read (`grse train`'s [train])."""
_DEFAULT_MAX_TOKENS: dict[str, int] = {"actor": 4096, "critic": 4000, "optimizer": 1200}
"""The paper's generation caps, the default for roles on a remote (GPU) endpoint."""

EMBEDDED_DEFAULT_MAX_TOKENS: dict[str, int] = {"actor": 512, "critic": 1024, "optimizer": 800}
"""Default caps for roles on the embedded CPU engine, where a small model that loops to the
paper's 4,096-token cap holds the single engine for ten minutes and starves every queued
request (measured with the 0.5B model). A cap set explicitly anywhere always wins."""


def _env_name(section: str, field: str) -> str:
    return f"GRSE_{section.upper()}_{field.upper()}"


def _normalise(section: str, field: str, value: object) -> object:
    if section in ROLES and field in {"base_url", "api_key_env"} and isinstance(value, str):
        return None if value.strip().lower() in _EMBEDDED_MARKERS else value
    return value


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise ConfigError(f"{path}: config file not found") from error
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not UTF-8 text") from error
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from error


def load_config(
    toml_path: Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, object] | None = None,
) -> LLMConfig:
    """Merge defaults < TOML < environment < overrides into an `LLMConfig`.

    TOML has one table per section (``[actor]``, ``[critic]``, ``[optimizer]``, ``[engine]``).
    Environment variables are ``GRSE_<SECTION>_<FIELD>`` (``GRSE_ACTOR_BASE_URL``,
    ``GRSE_ENGINE_THREADS``) plus ``GRSE_CACHE_DIR``; ``env`` None reads ``os.environ``.
    Overrides use dotted keys (``"actor.model"``, ``"engine.port"``); None values are ignored
    so unset CLI flags can be passed through. A role ``base_url`` of ``""``, ``"embedded"`` or
    ``"local"`` means the embedded engine.
    """
    environment = os.environ if env is None else env
    merged: dict[str, dict[str, object]] = {section: {} for section in _SECTIONS}
    sources: dict[tuple[str, str], str] = {}
    merged["engine"]["cache_dir"] = default_cache_dir(environment)
    sources[("engine", "cache_dir")] = "GRSE_CACHE_DIR or default"
    for role, cap in _DEFAULT_MAX_TOKENS.items():
        merged[role]["max_tokens"] = cap
        sources[(role, "max_tokens")] = "default"

    if toml_path is not None:
        document = _read_toml(toml_path)
        for section, table in document.items():
            if section in OTHER_SECTIONS:
                continue
            if section not in _SECTIONS:
                raise ConfigError(f"{toml_path}: unknown section [{section}]")
            if not isinstance(table, dict):
                raise ConfigError(f"{toml_path}: [{section}] must be a table")
            for field, value in table.items():
                _set(merged, sources, section, field, value, f"{toml_path} [{section}]")

    for section, schema in _SECTIONS.items():
        for field in schema.model_fields:
            name = _env_name(section, field)
            if name in environment:
                _set(merged, sources, section, field, environment[name], f"env {name}")

    for key, value in (overrides or {}).items():
        if value is None:
            continue
        section, _, field = key.partition(".")
        if not field:
            raise ConfigError(f"override {key!r}: expected 'section.field'")
        _set(merged, sources, section, field, value, f"override {key}")

    for role, cap in EMBEDDED_DEFAULT_MAX_TOKENS.items():
        if sources[(role, "max_tokens")] == "default" and merged[role].get("base_url") is None:
            merged[role]["max_tokens"] = cap
            sources[(role, "max_tokens")] = "default (embedded engine)"

    try:
        return LLMConfig.model_validate(merged)
    except ValidationError as error:

        def origin(location: Location) -> str:
            # Sources are kept per (section, field); a nested part's value came with its field.
            section, field = (str(part) for part in (*location[:2], "", "")[:2])
            return sources.get((section, field), "default")

        raise ConfigError(f"config {describe_validation_error(error, origin=origin)}") from error


def _set(
    merged: dict[str, dict[str, object]],
    sources: dict[tuple[str, str], str],
    section: str,
    field: str,
    value: object,
    origin: str,
) -> None:
    schema = _SECTIONS.get(section)
    if schema is None:
        raise ConfigError(f"{origin}: unknown section {section!r}")
    if field not in schema.model_fields:
        raise ConfigError(f"{origin}: unknown key {section}.{field}")
    merged[section][field] = _normalise(section, field, value)
    sources[(section, field)] = origin
