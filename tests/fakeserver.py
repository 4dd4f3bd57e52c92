"""A fake OpenAI-compatible chat server for fault tests and the fault benchmark.

It answers ``POST /<role>/v1/chat/completions`` (every other route is a 404) well enough to
drive `grse train` and `grse eval` through the real client path (`ModelRoles` -> ChatOpenAI ->
HTTP): plain text for free generation, a forced function call whose arguments are built from the
function's JSON schema (first enum value, required fields, ``minItems``), and ``n`` choices.
Point each role at its own path (`FakeOpenAIServer.env`), so every request is counted by the role
that sent it; the tool name (``CriticOutput``, ``SkillDraft``, ...) tells the kind of structured
call. Streaming (``"stream": true``) is not served: the commands under test do not stream.

Faults are injected on chosen requests (`Fault`: HTTP 500, a hang beyond the client timeout, a
truncated body, invalid JSON, an invalid tool call, or a refusal: HTTP 400 as a server answers a
prompt beyond its context; `text` narrows a fault to requests whose messages contain it), and
`Kill` sends a signal to a process when the n-th matching request arrives (before it is
answered), which is how the tests stop `grse train` inside a stage without touching its code.
With ``upstream`` the server forwards every request to a real OpenAI-compatible server (the
embedded engine) and only counts, faults and kills.

The server binds 127.0.0.1 on a free port, serves from a daemon thread, answers at most
``max_requests`` requests and stops by itself after ``lifetime_s`` seconds.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
import signal
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

FaultKind = Literal["http_500", "hang", "truncated", "invalid_json", "invalid_tool_call", "refused"]
ROLES = ("actor", "critic", "optimizer")
SCRIPTED_JUDGES = ("critic", "optimizer")
"""The roles an engine test scripts when the small model cannot fill their replies."""
WRONG_ANSWER = "Answer: unknown"


@dataclass(frozen=True)
class Match:
    """Which requests a rule applies to: a role and/or a tool name (None: any)."""

    role: str | None = None
    tool: str | None = None

    def accepts(self, role: str, tool: str | None) -> bool:
        return (self.role is None or self.role == role) and (self.tool is None or self.tool == tool)


@dataclass
class Fault:
    """Inject `kind` into matching requests number `first` .. `first + count - 1` (1-based);
    with `text`, only requests whose messages contain it match."""

    kind: FaultKind
    match: Match = field(default_factory=Match)
    first: int = 1
    count: int = 1
    seen: int = 0
    text: str | None = None

    def applies(self, role: str, tool: str | None, messages: str = "") -> bool:
        if not self.match.accepts(role, tool):
            return False
        if self.text is not None and self.text not in messages:
            return False
        self.seen += 1
        return self.first <= self.seen < self.first + self.count


@dataclass
class Kill:
    """Send `signum` to `pid` when the `nth` matching request arrives (it is never answered)."""

    pid: int
    nth: int
    match: Match = field(default_factory=Match)
    signum: int = signal.SIGKILL
    seen: int = 0
    fired: bool = False

    def due(self, role: str, tool: str | None) -> bool:
        if self.fired or not self.match.accepts(role, tool):
            return False
        self.seen += 1
        return self.seen == self.nth


@dataclass(frozen=True)
class RequestRecord:
    """One request as the server saw it."""

    number: int
    role: str
    tool: str | None
    n: int
    fingerprint: str
    fault: FaultKind | None
    killed: bool


# -- replies ---------------------------------------------------------------------------------


def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    while "$ref" in schema:
        path = str(schema["$ref"]).removeprefix("#/").split("/")
        target: Any = root
        for part in path:
            target = target[part]
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


_TEXT_BY_FIELD = {
    "description": "Use when writing the final answer: give only the short exact span.",
    "body": "Answer with the entity, date or number only. End with 'Answer: <span>'.",
    "explanation": "The rollout answered without the span the passage states (r1.s1).",
    "correction": "Quote the exact span from the passage as the answer.",
    "feedback": "Answers did not use the passage's exact words.",
    "missing_capability": "answer with the exact span",
    "evidence": "r1.s1 answered with a word that is not in the passage.",
    "summary": "Keep answers to the exact span.",
    "suggested_edit": "",
    "suggested_refinement": "",
}


def instance(schema: Mapping[str, Any], root: Mapping[str, Any], key: str, salt: str) -> Any:
    """A small value that satisfies `schema` (the subset pydantic emits for the project)."""
    schema = _resolve(schema, root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for combinator in ("anyOf", "oneOf", "allOf"):
        if combinator in schema:
            options = [_resolve(s, root) for s in schema[combinator]]
            chosen = next((s for s in options if s.get("type") != "null"), options[0])
            return instance(chosen, root, key, salt)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties: Mapping[str, Any] = schema.get("properties", {})
        return {name: instance(sub, root, name, salt) for name, sub in properties.items()}
    if kind == "array":
        items = _resolve(schema.get("items", {}), root)
        low, high = int(schema.get("minItems", 0)), schema.get("maxItems")
        of_objects = any(marker in items for marker in ("properties", "anyOf", "oneOf"))
        # One object in an optional list of objects (a diagnosis, a credit, some feedback), so
        # every stage has something to work on; optional lists of plain strings stay empty.
        wanted = 1 if of_objects and low == 0 and high != 0 else low
        return [instance(items, root, key, salt) for _ in range(wanted)]
    if kind == "string":
        if key == "name":
            return f"answer-span-{salt[:6]}"
        text = _TEXT_BY_FIELD.get(key, f"{key} text")
        return text.ljust(int(schema.get("minLength", 0)), ".")
    if kind == "integer":
        return int(schema.get("minimum", 0))
    if kind == "number":
        low_value = float(schema.get("minimum", -1.0))
        high_value = float(schema.get("maximum", 1.0))
        return max(low_value, min(high_value, 0.5))
    if kind == "boolean":
        return False
    return None


def forced_tool(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The function the request forces (``tool_choice`` naming one function), if any."""
    choice = body.get("tool_choice")
    name = None
    if isinstance(choice, Mapping):
        name = (choice.get("function") or {}).get("name")
    tools = [t.get("function", {}) for t in body.get("tools") or []]
    if name is None and choice == "required" and len(tools) == 1:
        name = tools[0].get("name")
    return next((t for t in tools if t.get("name") == name), None) if name else None


def deterministic_reply(body: Mapping[str, Any], fingerprint: str) -> list[dict[str, Any]]:
    """Choices for a request: a schema-filling function call when one is forced, else text.

    Text replies never contain the gold answer, so every rollout fails and every critic call
    must diagnose; replies depend only on the request, so a resumed run sees the same ones.
    """
    n = int(body.get("n") or 1)
    tool = forced_tool(body)
    choices = []
    for index in range(n):
        if tool is not None:
            parameters = tool.get("parameters", {})
            args = instance(parameters, parameters, "", fingerprint)
            message: dict[str, Any] = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{fingerprint[:8]}_{index}",
                        "type": "function",
                        "function": {"name": tool["name"], "arguments": json.dumps(args)},
                    }
                ],
            }
            reason = "tool_calls"
        else:
            message = {"role": "assistant", "content": f"{WRONG_ANSWER} (choice {index})"}
            reason = "stop"
        choices.append({"index": index, "message": message, "finish_reason": reason})
    return choices


def _tool_name(body: Mapping[str, Any]) -> str | None:
    tool = forced_tool(body)
    return str(tool["name"]) if tool is not None else None


def fingerprint_of(body: Mapping[str, Any]) -> str:
    """Content hash of a request (model, messages, tools, sampling): equal requests, equal hash."""
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


# -- the server ------------------------------------------------------------------------------


class FakeOpenAIServer:
    """The fake server; use as a context manager (`start` / `stop`)."""

    def __init__(
        self,
        *,
        faults: list[Fault] | None = None,
        upstream: str | None = None,
        hang_s: float = 5.0,
        max_requests: int = 5000,
        lifetime_s: float = 600.0,
        reply: Callable[[Mapping[str, Any], str], list[dict[str, Any]]] = deterministic_reply,
    ) -> None:
        self.faults = list(faults or [])
        self.kills: list[Kill] = []
        self.upstream = upstream.rstrip("/") if upstream else None
        self.hang_s = hang_s
        self.max_requests = max_requests
        self.lifetime_s = lifetime_s
        self.reply = reply
        self._lock = threading.Lock()
        self._records: list[RequestRecord] = []
        self.bodies: dict[str, Mapping[str, Any]] = {}
        """Every request body seen, by fingerprint (to explain a surprising request)."""
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._threads: list[threading.Thread] = []

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if not urllib.parse.urlparse(self.path).path.endswith("/chat/completions"):
                    # Like a hosted API: no tokenize or other extra routes (not model calls).
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "request body is not JSON"}})
                    return
                server._handle(self, body, raw)

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        serve = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-openai",
            daemon=True,
        )
        watchdog = threading.Thread(target=self._watchdog, name="fake-openai-watchdog", daemon=True)
        self._threads = [serve, watchdog]
        for thread in self._threads:
            thread.start()
        return self

    def _watchdog(self) -> None:
        if not self._stopping.wait(self.lifetime_s) and self._httpd is not None:
            self._httpd.shutdown()

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        for thread in self._threads:
            thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- configuration -------------------------------------------------------------------------

    @property
    def port(self) -> int:
        assert self._httpd is not None, "start the server first"
        return int(self._httpd.server_address[1])

    def base_url(self, role: str) -> str:
        return f"http://127.0.0.1:{self.port}/{role}/v1"

    def env(
        self, *, roles: tuple[str, ...] = ROLES, timeout_s: float = 5.0, max_retries: int = 2
    ) -> dict[str, str]:
        """``GRSE_<ROLE>_*`` variables pointing each of `roles` (default every role) at its own
        path of this server (`SCRIPTED_JUDGES`: the actor left to the engine)."""
        variables: dict[str, str] = {}
        for role in roles:
            prefix = f"GRSE_{role.upper()}_"
            variables[prefix + "BASE_URL"] = self.base_url(role)
            variables[prefix + "MODEL"] = "fake"
            variables[prefix + "TIMEOUT_S"] = str(timeout_s)
            variables[prefix + "MAX_RETRIES"] = str(max_retries)
        return variables

    def kill_on(self, pid: int, nth: int, match: Match | None = None) -> Kill:
        """Arm a SIGKILL of `pid` at the `nth` request matching `match`."""
        kill = Kill(pid=pid, nth=nth, match=match or Match())
        with self._lock:
            self.kills.append(kill)
        return kill

    # -- observation ---------------------------------------------------------------------------

    @property
    def records(self) -> list[RequestRecord]:
        with self._lock:
            return list(self._records)

    def counts(self) -> Counter[str]:
        """Requests received per role (including faulted and killed ones)."""
        return Counter(record.role for record in self.records)

    def reset(self) -> None:
        """Forget the requests seen so far (faults and kills keep their counters)."""
        with self._lock:
            self._records.clear()

    # -- handling ------------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler, body: Mapping[str, Any], raw: bytes) -> None:
        path = urllib.parse.urlparse(handler.path).path.strip("/").split("/")
        role = path[0] if path and path[0] in ROLES else "unknown"
        tool = _tool_name(body)
        fingerprint = fingerprint_of(body)
        with self._lock:
            self.bodies[fingerprint] = body
            number = len(self._records) + 1
            # Every rule sees every request it matches (its count), the first hit applies.
            messages = json.dumps(body.get("messages", []))
            faults = [f.kind for f in self.faults if f.applies(role, tool, messages)]
            kills = [k for k in self.kills if k.due(role, tool)]
            fault = faults[0] if faults else None
            kill = kills[0] if kills else None
            if kill is not None:
                kill.fired = True
            self._records.append(
                RequestRecord(
                    number,
                    role,
                    tool,
                    int(body.get("n") or 1),
                    fingerprint,
                    fault,
                    kill is not None,
                )
            )
            over_budget = number > self.max_requests
        if kill is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(kill.pid, kill.signum)
            self._close(handler)
            return
        if over_budget:
            self._error(handler, 503, "fake server: request budget exhausted")
            return
        if fault == "http_500":
            self._error(handler, 500, "injected internal error")
        elif fault == "refused":
            self._error(handler, 400, "injected refusal: the prompt exceeds the context length")
        elif fault == "hang":
            self._stopping.wait(self.hang_s)
            self._close(handler)
        elif fault == "truncated":
            data = self._completion(body, fingerprint, raw)
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data[: len(data) // 2])
            handler.wfile.flush()
            self._close(handler)
        elif fault == "invalid_json":
            self._write(handler, 200, b'{"id": "chatcmpl-broken", "choices": [{"index": 0, ')
        elif fault == "invalid_tool_call":
            document = json.loads(self._completion(body, fingerprint, raw))
            for choice in document.get("choices", []):
                for call in choice.get("message", {}).get("tool_calls") or []:
                    call["function"]["arguments"] = '{"this is": not JSON'
            self._write(handler, 200, json.dumps(document).encode())
        else:
            self._write(handler, 200, self._completion(body, fingerprint, raw))

    def _completion(self, body: Mapping[str, Any], fingerprint: str, raw: bytes) -> bytes:
        if self.upstream is not None:
            return self._forward(raw)
        choices = self.reply(body, fingerprint)
        prompt_tokens = max(1, len(json.dumps(body.get("messages", []))) // 4)
        completion_tokens = sum(max(1, len(json.dumps(c["message"])) // 4) for c in choices)
        return json.dumps(
            {
                "id": f"chatcmpl-{fingerprint[:12]}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": str(body.get("model", "fake")),
                "choices": choices,
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            }
        ).encode()

    def _forward(self, raw: bytes) -> bytes:
        assert self.upstream is not None
        target = urllib.parse.urlparse(self.upstream + "/chat/completions")
        connection = http.client.HTTPConnection(
            target.hostname or "127.0.0.1", target.port, timeout=600
        )
        try:
            connection.request(
                "POST", target.path, body=raw, headers={"Content-Type": "application/json"}
            )
            return connection.getresponse().read()
        finally:
            connection.close()

    @staticmethod
    def _write(handler: BaseHTTPRequestHandler, status: int, data: bytes) -> None:
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
        except OSError:
            pass  # the client went away (killed or timed out)

    def _error(self, handler: BaseHTTPRequestHandler, status: int, message: str) -> None:
        payload = {"error": {"message": message, "type": "server_error", "code": status}}
        self._write(handler, status, json.dumps(payload).encode())

    @staticmethod
    def _close(handler: BaseHTTPRequestHandler) -> None:
        handler.close_connection = True
        with contextlib.suppress(OSError):
            handler.wfile.flush()
