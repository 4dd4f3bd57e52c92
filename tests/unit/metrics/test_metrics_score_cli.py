"""`grse score` and the JSONL scoring behind it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from grse_graph.cli.score_cmd import register
from grse_graph.errors import ScoringError
from grse_graph.metrics.batch import Metric, format_summary, score_lines, summarize


def make_app() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.command("noop")
    def noop() -> None:
        """A second command so Typer keeps `score` as a named sub-command."""

    return app


def jsonl(*records: object) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def run(args: list[str], stdin: str | None = None):
    return CliRunner().invoke(make_app(), args, input=stdin)


def test_hotpotqa_file_adds_f1_and_em_and_keeps_other_fields(tmp_path: Path) -> None:
    path = tmp_path / "preds.jsonl"
    path.write_text(
        jsonl(
            {"id": "q1", "prediction": "the Eiffel Tower", "answer": "Eiffel Tower"},
            {"id": "q2", "prediction": "yes it is", "answer": "yes"},
            {"id": "q3", "prediction": "Barack Obama", "answer": "Obama"},
        ),
        encoding="utf-8",
    )
    result = run(["score", "--metric", "hotpotqa", "--input", str(path)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [row["id"] for row in rows] == ["q1", "q2", "q3"]
    assert rows[0] == {
        "id": "q1",
        "prediction": "the Eiffel Tower",
        "answer": "Eiffel Tower",
        "f1": 1.0,
        "em": 1.0,
    }
    assert (rows[1]["f1"], rows[1]["em"]) == (0.0, 0.0)
    assert rows[2]["f1"] == pytest.approx(2 / 3)
    assert all(isinstance(row["f1"], float) and isinstance(row["em"], float) for row in rows)
    assert "bleu" not in rows[0]
    assert "n=3" in result.stderr
    assert "F1=0.5556" in result.stderr and "EM=0.3333" in result.stderr


def test_locomo_from_stdin_adds_f1_and_bleu_and_summarises_per_category() -> None:
    stdin = jsonl(
        {"prediction": "red", "answer": "red blue", "category": 2},
        {"prediction": "apples", "answer": "apples, bananas", "category": 1},
        {"prediction": "Likely yes", "answer": "Likely yes; she said so", "category": 3},
        {"prediction": "2022", "answer": 2022, "category": 4},
    )
    result = run(["score", "-m", "locomo", "-i", "-"], stdin=stdin)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(row["f1"], row["bleu"]) for row in rows[1:]] == [(0.5, 0.5), (1.0, 1.0), (1.0, 1.0)]
    assert rows[0]["bleu"] == pytest.approx(0.36787944117144233)
    assert rows[3]["answer"] == 2022  # echoed as given; scored as the text "2022"
    assert "em" not in rows[0]
    for category in (1, 2, 3, 4):
        assert f"category {category}: n=1" in result.stderr
    assert "category 1: n=1  F1=0.5000  BLEU=0.5000" in result.stderr


@pytest.mark.parametrize(
    ("metric", "lines", "message"),
    [
        (
            "hotpotqa",
            [{"prediction": "a", "answer": "a"}, {"prediction": "b"}],
            "<stdin> line 2: answer: Field required",
        ),
        (
            "locomo",
            [{"prediction": "a", "answer": "a", "category": 2}, {"prediction": "a", "answer": "a"}],
            "<stdin> line 2: category: Field required",
        ),
        ("hotpotqa", [{"answer": "a"}], "<stdin> line 1: prediction: Field required"),
        (
            "locomo",
            [{"prediction": "a", "answer": "a", "category": 5}],
            "<stdin> line 1: LoCoMo category 5 (adversarial) is excluded from scoring",
        ),
        (
            "locomo",
            [{"prediction": "a", "answer": "a", "category": "2"}],
            "LoCoMo category must be 1-4 or one of multi-hop, temporal, open-domain, single-hop, "
            "got '2'",
        ),
        (
            "hotpotqa",
            [{"prediction": None, "answer": "a"}],
            "line 1: prediction: Input should be a valid string (got None)",
        ),
        ("hotpotqa", [["a", "b"]], "line 1: expected a JSON object, got list"),
    ],
)
def test_bad_records_are_errors_naming_the_line(metric, lines, message) -> None:
    result = run(["score", "--metric", metric, "--input", "-"], stdin=jsonl(*lines))
    assert result.exit_code != 0
    assert isinstance(result.exception, ScoringError)
    assert message in str(result.exception)
    assert "\n" not in str(result.exception)
    assert result.stdout == ""  # nothing is scored when one line is bad


def test_bad_json_names_the_physical_line_counting_blank_lines() -> None:
    stdin = jsonl({"prediction": "a", "answer": "a"}) + "\n" + '{"prediction": "a",\n'
    result = run(["score", "--metric", "hotpotqa", "--input", "-"], stdin=stdin)
    assert isinstance(result.exception, ScoringError)
    assert str(result.exception).startswith("<stdin> line 3: invalid JSON")


def test_unicode_line_separators_inside_strings_do_not_split_records() -> None:
    stdin = '{"prediction": "Paris\u2028France\u0085", "answer": "Paris France"}\r\n'
    result = run(["score", "--metric", "hotpotqa", "--input", "-"], stdin=stdin)
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)
    assert (row["f1"], row["em"]) == (1.0, 1.0)


def test_missing_file_and_empty_input_are_errors(tmp_path: Path) -> None:
    missing = run(["score", "--metric", "hotpotqa", "--input", str(tmp_path / "none.jsonl")])
    assert isinstance(missing.exception, ScoringError)
    assert "none.jsonl: input file not found" in str(missing.exception)
    empty = run(["score", "--metric", "hotpotqa", "--input", "-"], stdin="\n\n")
    assert isinstance(empty.exception, ScoringError)
    assert "no records to score" in str(empty.exception)


def test_unknown_metric_is_a_usage_error() -> None:
    result = run(["score", "--metric", "squad", "--input", "-"], stdin="")
    assert result.exit_code == 2


def test_score_lines_and_summary_without_the_cli() -> None:
    records = score_lines(
        [
            json.dumps({"prediction": "Paris", "answer": "Paris", "category": 2}),
            "",
            json.dumps({"prediction": "", "answer": "Paris", "category": 2}),
            json.dumps({"prediction": "x, y", "answer": "x, y", "category": 1}),
        ],
        Metric.LOCOMO,
        "preds.jsonl",
    )
    assert [record.line_number for record in records] == [1, 3, 4]
    summary = summarize(records, Metric.LOCOMO)
    assert summary.overall.count == 3
    assert summary.overall.mean_f1 == pytest.approx(2 / 3)
    assert summary.overall.mean_em is None
    assert summary.per_category[2].count == 2
    assert summary.per_category[2].mean_bleu == pytest.approx(0.5)
    assert summary.per_category[1].mean_f1 == 1.0
    text = format_summary(summary)
    assert text.splitlines()[0].startswith("locomo overall: n=3")


def test_summary_of_nothing_is_an_error() -> None:
    with pytest.raises(ScoringError):
        summarize([], Metric.HOTPOTQA)


def test_locomo_categories_may_be_named_and_cited_answers_are_counted() -> None:
    lines = jsonl(
        {"prediction": "Noodle [D1:1]", "answer": "Noodle", "category": "single-hop"},
        {"prediction": "Noodle", "answer": "Noodle", "category": 4},
    ).split("\n")
    summary = summarize(score_lines(lines, Metric.LOCOMO, "t"), Metric.LOCOMO)
    assert summary.per_category[4].count == 2
    assert summary.overall.cited_answers == 1
    assert summary.overall.mean_f1 < 1.0
    assert "cited=1" in format_summary(summary)
