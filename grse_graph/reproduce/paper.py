"""The paper's result numbers, stored as data in `evals/paper/<table>.json`: by row label and
column key, a number, a text (such as "5/5") or null when the number is not available to us."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from grse_graph.errors import ConfigError
from grse_graph.validation_text import describe_validation_error

from .settings import default_paper_dir

PaperValue = float | str | None


class PaperTable(BaseModel):
    """One table's numbers as the paper reports them (`available` False: none given to us)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    table: str
    caption: str
    available: bool
    where: str
    values: dict[str, dict[str, PaperValue]]

    def value(self, row: str, column: str) -> PaperValue:
        """The paper's value of one cell (None: missing)."""
        return self.values.get(row, {}).get(column)


def load_paper(table: str, paper_dir: Path | None = None) -> PaperTable:
    """`evals/paper/<table>.json`; a missing or invalid file is one `ConfigError` line."""
    path = (paper_dir or default_paper_dir()) / f"{table}.json"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the paper's numbers ({error.strerror})") from None
    try:
        paper = PaperTable.model_validate_json(text)
    except ValidationError as error:
        raise ConfigError(f"{path}: {describe_validation_error(error)}") from None
    if paper.table != table:
        raise ConfigError(f"{path}: holds {paper.table!r}, not {table!r}")
    return paper
