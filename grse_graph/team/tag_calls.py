"""Tool calls an agent writes as tags in its reply: the syntax of the ``text`` tool protocol.

A call is the tool's name as an opening and a closing tag around its one argument, written as
is (no quotes, no JSON): ``<grep>adopt|adoption</grep>`` is a call of `grep` with the query
``adopt|adoption`` (GRSE's LoCoMo retriever protocol, grse.txt:445). Tags are exact: lower-case
tool names as the tools are named, no spaces or attributes inside the angle brackets. Only the
names of offered tools are tags; any other ``<...>`` is text. The argument is stripped of
surrounding whitespace and kept otherwise (it may span lines).

`parse_tag_calls` reads a reply into its calls and its malformed tags, in the order written:

- ``unclosed``: an opening tag with no closing tag after it;
- ``empty``: nothing but whitespace between the tags;
- ``nested``: a tool tag inside a call (``<grep>a<grep>b</grep></grep>``; the outer call, up to
  its matching closing tag, is one malformed tag);
- ``unopened``: a closing tag with no opening tag before it.

A reply with no tag at all holds no call: under the protocol it is the agent's hand-off.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from pydantic import BaseModel, ConfigDict

from .rollout import CallEventKind

SHOWN_CHARS = 300
"""How much of a malformed tag is kept in its record and quoted back to the agent."""


class TagCall(BaseModel):
    """One well-formed call: the tool, its argument, and the call as written."""

    model_config = ConfigDict(frozen=True)

    tool: str
    argument: str
    written: str


class MalformedTag(BaseModel):
    """A tag that is not a call: which tool it names, what is wrong, and what was written."""

    model_config = ConfigDict(frozen=True)

    tool: str
    problem: CallEventKind
    written: str


TagItem = TagCall | MalformedTag


def call_tag(tool: str, argument: str) -> str:
    """How a call of `tool` with `argument` is written."""
    return f"<{tool}>{argument}</{tool}>"


def _tag_pattern(tools: Collection[str]) -> re.Pattern[str]:
    # Longest names first, so one name that starts another cannot take its place.
    names = "|".join(re.escape(name) for name in sorted(tools, key=lambda n: (-len(n), n)))
    return re.compile(rf"<(/?)({names})>")


def _shown(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "..."


def parse_tag_calls(text: str, tools: Collection[str]) -> list[TagItem]:
    """The calls of `tools` and the malformed tags in `text`, in the order written (see the
    module doc); an empty list when the text holds no tag of these tools."""
    if not tools:
        return []
    items: list[TagItem] = []
    open_match: re.Match[str] | None = None
    depth = 0
    nested = False
    for match in _tag_pattern(tools).finditer(text):
        closing, name = match.group(1) == "/", match.group(2)
        if open_match is None:
            if closing:
                items.append(MalformedTag(tool=name, problem="unopened", written=match.group(0)))
            else:
                open_match, depth, nested = match, 1, False
            continue
        tool = open_match.group(2)
        if not closing:
            nested = True
            depth += 1 if name == tool else 0
            continue
        if name != tool:
            nested = True
            continue
        depth -= 1
        if depth > 0:
            continue
        written = text[open_match.start() : match.end()]
        argument = text[open_match.end() : match.start()].strip()
        if nested:
            items.append(MalformedTag(tool=tool, problem="nested", written=_shown(written)))
        elif not argument:
            items.append(MalformedTag(tool=tool, problem="empty", written=written))
        else:
            items.append(TagCall(tool=tool, argument=argument, written=written))
        open_match = None
    if open_match is not None:
        written = text[open_match.start() :].rstrip()
        items.append(
            MalformedTag(tool=open_match.group(2), problem="unclosed", written=_shown(written))
        )
    return items
