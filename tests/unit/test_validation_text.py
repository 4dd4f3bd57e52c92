"""`describe_validation_error`: one line that names every failing field by its dotted location."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field, ValidationError, field_validator

from grse_graph.validation_text import describe_validation_error, error_location


class Train(BaseModel):
    group_size: int = Field(gt=1)


class Config(BaseModel):
    train: Train
    task: str
    scores: list[int] = Field(default_factory=list)
    note: str = ""

    @field_validator("note")
    @classmethod
    def _no_shouting(cls, value: str) -> str:
        if value.isupper():
            raise ValueError("note must not be all capitals")
        return value


def _error(data: object) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        Config.model_validate(data)
    return caught.value


def test_a_nested_field_is_named_by_its_dotted_location_with_the_rejected_value() -> None:
    message = describe_validation_error(_error({"train": {"group_size": 1}, "task": "demo"}))
    assert message == "train.group_size: Input should be greater than 1 (got 1)"


def test_a_list_index_is_part_of_the_location() -> None:
    error = _error({"train": {"group_size": 2}, "task": "demo", "scores": [1, "x"]})
    assert describe_validation_error(error).startswith("scores.1: Input should be a valid integer")
    assert error_location(("skills", 0, "name")) == "skills.0.name"


def test_several_errors_are_counted_and_each_names_its_field() -> None:
    message = describe_validation_error(_error({"train": {"group_size": 1}}))
    assert message == (
        "2 validation error(s): train.group_size: Input should be greater than 1 (got 1); "
        "task: Field required"
    )
    assert "\n" not in message


def test_a_validator_message_loses_pydantics_prefix_and_keeps_its_field() -> None:
    error = _error({"train": {"group_size": 2}, "task": "demo", "note": "LOUD"})
    assert describe_validation_error(error) == "note: note must not be all capitals (got 'LOUD')"


def test_a_root_error_has_no_location_and_does_not_echo_the_whole_input() -> None:
    with pytest.raises(ValidationError) as caught:
        Config.model_validate_json("not json at all")
    assert describe_validation_error(caught.value).startswith("Invalid JSON: ")
    assert "not json" not in describe_validation_error(caught.value)


def test_a_long_rejected_value_is_shortened_to_keep_the_line_short() -> None:
    error = _error({"train": {"group_size": 2}, "task": "demo", "note": "A" * 500})
    message = describe_validation_error(error)
    assert message.endswith("...)")
    assert len(message) < 120
