"""Configuration of the model roles and of the embedded engine: overrides (CLI flags) over
``GRSE_`` environment variables over a TOML file over the defaults (every role on the embedded
engine), merged by `load_config`, which names the first bad value's key and origin.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, NamedTuple, cast

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
"""How a role's model is asked for a schema object (see `grse_graph.llm.structured`)."""

StructuredMethodSetting = Literal[StructuredMethod, "auto"]
ThinkingMode = Literal["auto", "off", "on"]
ToolTranscriptSetting = Literal["auto", "native", "text"]
ForcedCallSetting = Literal["auto", "tool_choice", "json_schema"]
SchemaNarrowing = Literal["per_agent", "flat", "off"]
_EMBEDDED_MARKERS = frozenset({"", "embedded", "local"})


class ModelPreset(NamedTuple):
    """A family's training top-k (the paper's) and whether its template has a thinking mode."""

    top_k: int
    has_thinking: bool = False


# The first marker in the lower-cased model name wins ("qwen3" before "qwen"); top-k: App. A.
MODEL_PRESETS: tuple[tuple[str, ModelPreset], ...] = (
    ("qwen3", ModelPreset(20, has_thinking=True)),
    ("qwq", ModelPreset(20, has_thinking=True)),
    ("qwen", ModelPreset(20)),
    ("gemma", ModelPreset(64)),
)
DEFAULT_TRAINING_TOP_K = 20
"""Training top-k for a model of no known family (the paper's Qwen value)."""

_ENGINE_MODEL_FAMILIES: dict[str, str] = {
    "default": "qwen2.5-coder-0.5b",
    "medium": "qwen2.5-coder-1.5b",
    "small": "smollm2-135m",
}


def model_preset(model_name: str) -> ModelPreset | None:
    """The preset of the family a model name belongs to (None: no known family)."""
    lowered = model_name.lower()
    return next((preset for marker, preset in MODEL_PRESETS if marker in lowered), None)


class RoleSettings(BaseModel):
    """Endpoint and default decoding settings of one role (``base_url`` None: the embedded
    engine); docs/MODELS.md describes the fields. ``top_k`` goes in ``extra_body`` (vLLM and
    llama.cpp read it there), the cap also as ``max_tokens``: some servers ignore
    ``max_completion_tokens``. ``structured_method`` ``auto`` is ``json_schema`` on the embedded
    engine (its function calling returned the JSON as text without the fields, issue 10);
    ``schema_narrowing`` ``per_agent``: with the plain or flat schema the embedded 0.5B critic
    cited wrong agents or steps; ``structured_stream`` is off as the fault-test server does not
    stream."""

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
        """What to send as ``chat_template_kwargs`` for the thinking switch, or None: nothing
        for a model without a known thinking mode under "auto", since strict APIs reject
        unknown fields; "off" / "on" always send ``enable_thinking``."""
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
    """How to run the embedded engine (`grse_graph.llm.engine`); docs/ENGINE.md describes the
    fields and the measurements behind their defaults (``n_parallel`` 6 holds the demo team's five
    agent prefixes, ``flash_attention`` halved generation speed on 2-core CPUs).
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
    """The three roles and the embedded engine (default caps: the paper's 4,096 / 4,000 / 1,200)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    actor: RoleSettings = Field(default_factory=lambda: RoleSettings(max_tokens=4096))
    critic: RoleSettings = Field(default_factory=lambda: RoleSettings(max_tokens=4000))
    optimizer: RoleSettings = Field(default_factory=lambda: RoleSettings(max_tokens=1200))
    engine: EngineSettings = Field(default_factory=EngineSettings)

    def role(self, role: RoleName) -> RoleSettings:
        """Settings of one role."""
        return cast(RoleSettings, getattr(self, role))

    def uses_embedded_engine(self) -> bool:
        """True when at least one role needs the embedded engine."""
        return any(self.role(role).embedded for role in ROLES)

    def embedded_model(self, role: RoleName) -> str:
        """The model an embedded role runs on (its ``engine_model``, else the engine's)."""
        return self.role(role).engine_model or self.engine.model

    def embedded_models(self) -> list[str]:
        """The distinct models of the embedded roles, the actor's (or the engine's) first: one
        engine is started per model."""
        first = [self.engine.model] if self.role("actor").embedded else []
        embedded = [self.embedded_model(role) for role in ROLES if self.role(role).embedded]
        return list(dict.fromkeys(first + embedded))

    def model_name(self, role: RoleName) -> str:
        """The name a role's model family is read from: the served model's, or the embedded
        model's family (a .gguf path as is)."""
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
"""Default caps on the embedded CPU engine, where a 0.5B model looping to the paper's cap held
the engine for ten minutes and starved every queued request. An explicit cap always wins."""


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
    """Merge defaults < TOML < environment < overrides into an `LLMConfig`: TOML tables per
    section (``[actor]``, ``[critic]``, ``[optimizer]``, ``[engine]``), ``GRSE_<SECTION>_<FIELD>``
    variables and ``GRSE_CACHE_DIR`` (``env`` None reads ``os.environ``), dotted override keys
    (``"engine.port"``; None values, unset CLI flags, are ignored). A role ``base_url`` of ``""``,
    ``"embedded"`` or ``"local"`` is the embedded engine."""
    environment = os.environ if env is None else env
    merged: dict[str, dict[str, object]] = {section: {} for section in _SECTIONS}
    sources: dict[tuple[str, str], str] = {}

    def put(section: str, field: str, value: object, origin: str) -> None:
        schema = _SECTIONS.get(section)
        if schema is None:
            raise ConfigError(f"{origin}: unknown section {section!r}")
        if field not in schema.model_fields:
            raise ConfigError(f"{origin}: unknown key {section}.{field}")
        if section in ROLES and field in {"base_url", "api_key_env"} and isinstance(value, str):
            value = None if value.strip().lower() in _EMBEDDED_MARKERS else value
        merged[section][field] = value
        sources[(section, field)] = origin

    put("engine", "cache_dir", default_cache_dir(environment), "GRSE_CACHE_DIR or default")

    if toml_path is not None:
        for section, table in _read_toml(toml_path).items():
            if section in OTHER_SECTIONS:
                continue
            if section not in _SECTIONS:
                raise ConfigError(f"{toml_path}: unknown section [{section}]")
            if not isinstance(table, dict):
                raise ConfigError(f"{toml_path}: [{section}] must be a table")
            for field, value in table.items():
                put(section, field, value, f"{toml_path} [{section}]")

    for section, schema in _SECTIONS.items():
        for field in schema.model_fields:
            name = f"GRSE_{section.upper()}_{field.upper()}"
            if name in environment:
                put(section, field, environment[name], f"env {name}")

    for key, value in (overrides or {}).items():
        if value is None:
            continue
        section, _, field = key.partition(".")
        if not field:
            raise ConfigError(f"override {key!r}: expected 'section.field'")
        put(section, field, value, f"override {key}")

    for role in ROLES:
        if (role, "max_tokens") not in sources:
            embedded = merged[role].get("base_url") is None
            caps = EMBEDDED_DEFAULT_MAX_TOKENS if embedded else _DEFAULT_MAX_TOKENS
            merged[role]["max_tokens"] = caps[role]

    try:
        return LLMConfig.model_validate(merged)
    except ValidationError as error:

        def origin(location: Location) -> str:
            # Sources are kept per (section, field); a nested part's value came with its field.
            section, field = (str(part) for part in (*location[:2], "", "")[:2])
            return sources.get((section, field), "default")

        raise ConfigError(f"config {describe_validation_error(error, origin=origin)}") from error
