"""`grse score`: apply an official scorer to a JSONL file of predictions."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from grse_graph.errors import ScoringError
from grse_graph.metrics.batch import Metric, format_summary, score_lines, summarize

from .options import print_json

STDIN_MARKER = "-"
SCORE_HELP = (
    "Score predictions with an official scorer. Each input line needs `prediction` and `answer` "
    "(and `category` 1-4 for LoCoMo). Stdout gets each input object plus `f1` and `em` "
    "(HotpotQA) or `f1` and `bleu` (LoCoMo); stderr gets a summary. A bad line stops the run "
    "with an error naming the line, and nothing is written to stdout."
)


def _split_jsonl(text: str) -> list[str]:
    # Not str.splitlines(): JSON strings may hold raw U+2028 / U+0085, which are not line ends here.
    return text.split("\n")


def _read_lines(input_path: str) -> tuple[list[str], str]:
    if input_path == STDIN_MARKER:
        return _split_jsonl(sys.stdin.read()), "<stdin>"
    path = Path(input_path)
    try:
        return _split_jsonl(path.read_text(encoding="utf-8")), str(path)
    except FileNotFoundError:
        raise ScoringError(f"{path}: input file not found") from None
    except IsADirectoryError:
        raise ScoringError(f"{path}: is a directory, expected a JSONL file") from None
    except UnicodeDecodeError as error:
        raise ScoringError(f"{path}: not UTF-8 text ({error.reason})") from None


def score(
    metric: Annotated[Metric, typer.Option("--metric", "-m", help="Official scorer to apply.")],
    input_path: Annotated[
        str,
        typer.Option(
            "--input",
            "-i",
            help="JSONL file with `prediction`, `answer` (and `category` for LoCoMo); - for stdin.",
        ),
    ],
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print one JSON document instead: {records: [...], summary: {...}}.",
        ),
    ] = False,
) -> None:
    """Score predictions: stdout gets each input object plus its scores, stderr a summary.

    HotpotQA adds `f1` and `em`; LoCoMo (categories 1-4) adds `f1` and `bleu`. A bad line stops
    the run with an error naming the line; nothing is written to stdout then. With `--json`
    stdout gets one JSON document holding the scored records and the summary.
    """
    lines, source = _read_lines(input_path)
    records = score_lines(lines, metric, source)
    if as_json:
        summary = summarize(records, metric).model_dump(mode="json")
        print_json({"records": [r.output_object() for r in records], "summary": summary})
        return
    for record in records:
        typer.echo(json.dumps(record.output_object(), ensure_ascii=False))
    typer.echo(format_summary(summarize(records, metric)), err=True)


def register(app: typer.Typer) -> None:
    """Register the `score` command on the app."""
    app.command("score", help=SCORE_HELP)(score)
