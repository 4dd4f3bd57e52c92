"""Splitting SKILL.md text into YAML front matter and body, and writing it back.

Front matter is read with a loader that keeps every scalar a string (as the Agent Skills
reference validator does: `version: 1.0` means the string "1.0") and rejects duplicate keys,
so nothing a user wrote is silently reinterpreted or dropped.
"""

from __future__ import annotations

from typing import Any

import yaml

from grse_graph.errors import SkillError

from .limits import MAX_YAML_DEPTH
from .text import one_line, shown


class _StrictStringLoader(yaml.BaseLoader):
    """YAML loader: all scalars are strings; a repeated key, a key that is not a plain string,
    an alias, or nesting deeper than `MAX_YAML_DEPTH` is an error (so hostile front matter
    cannot crash or exhaust the reader)."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not allowed in front matter", event.start_mark
            )
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None, None, f"nested deeper than {MAX_YAML_DEPTH} levels", event.start_mark
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: set[object] = set()
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    raise yaml.constructor.ConstructorError(
                        None, None, "a mapping key must be a plain string", key_node.start_mark
                    )
                key = self.construct_object(key_node, deep=deep)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r}", key_node.start_mark
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def split_front_matter(text: str, source: str) -> tuple[dict[str, Any], str]:
    """The front-matter mapping and the raw body of SKILL.md text.

    `text` must start with a `---` line; the front matter ends at the next line that is exactly
    `---`. Line endings are normalised to `\\n` first. Raises `SkillError` naming `source`.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = text.removeprefix("\ufeff")
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        raise SkillError(
            f"{source}:1: missing front matter (the file must start with a '---' line)"
        )
    closing = next((i for i in range(1, len(lines)) if lines[i].rstrip() == "---"), None)
    if closing is None:
        raise SkillError(f"{source}: malformed front matter: no closing '---' line")
    yaml_text = "\n".join(lines[1:closing])
    body = "\n".join(lines[closing + 1 :])
    # A BaseLoader subclass builds only str, list and dict: safe.
    try:
        data = yaml.load(yaml_text, Loader=_StrictStringLoader)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{source}:{mark.line + 2}" if mark is not None else source
        problem = shown(one_line(error.problem or error.context or "invalid YAML"))
        raise SkillError(f"{where}: malformed YAML front matter: {problem}") from None
    except yaml.YAMLError as error:
        raise SkillError(
            f"{source}: malformed YAML front matter: {shown(one_line(str(error)))}"
        ) from None
    except RecursionError:
        raise SkillError(f"{source}: malformed YAML front matter: nested too deeply") from None
    if data is None:
        raise SkillError(f"{source}: front matter is empty (it needs name and description)")
    if not isinstance(data, dict):
        raise SkillError(f"{source}: malformed front matter: expected a mapping of fields")
    return data, body


def dump_front_matter(fields: dict[str, Any]) -> str:
    """YAML text for the front matter, keys in the given order, block style, UTF-8 as is."""
    return yaml.safe_dump(
        fields, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100
    )
