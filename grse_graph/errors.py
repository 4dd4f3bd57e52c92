"""Typed errors. Every error the CLI shows the user is a `GrseError` with a one-line message."""

from __future__ import annotations


class GrseError(Exception):
    """Base class: a problem the user can act on, described in one line."""


class SkillError(GrseError):
    """A skill package or library on disk is invalid. The message names the file and the problem."""


class ConfigError(GrseError):
    """A configuration value (TOML, environment, flag) is missing or invalid."""


class EngineError(GrseError):
    """The embedded local engine could not be started, reached or stopped."""


class ModelAssemblyError(GrseError):
    """A bundled model could not be found or assembled (missing chunk, wrong hash)."""


class StructuredOutputError(GrseError):
    """A model's output could not be parsed into the requested schema, even after one repair."""


class TaskError(GrseError):
    """A task, its data or one of its splits is missing or invalid."""


class ScoringError(GrseError):
    """An input to a metric is missing or malformed."""


class ModelRequestRefused(GrseError):
    """The model server refused a request (HTTP 400, e.g. a prompt beyond its context)."""


class ModelEndpointError(GrseError):
    """A model endpoint did not answer usably (unreachable, timed out, server error, malformed
    reply) within its retries. The message names the role, the endpoint and the cause."""


class RunawayGenerationStopped(GrseError):
    """A streamed model reply was stopped early because its tail kept repeating (thrown into the
    stream by `grse_graph.llm.structured`; the usage ledger counts it as a runaway stop)."""
