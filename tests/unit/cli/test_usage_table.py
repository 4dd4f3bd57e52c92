"""The terminal's per-role usage table: where the server reports no cached tokens per call
(llama-cpp-python), the total shows the embedded engine log's count and says where it came
from, as usage.json and report.md do."""

from __future__ import annotations

from rich.console import Console

from grse_graph.cli.train_cmd import print_usage
from grse_graph.llm.accounting import PromptEvalStats, RoleUsage, UsageReport


def _printed(report: UsageReport) -> str:
    console = Console(record=True, width=160)
    print_usage(console, report.model_dump(mode="json"))
    return console.export_text()


def _total_row(text: str) -> list[str]:
    row = next(line for line in text.splitlines() if "total" in line)
    return [cell.strip() for cell in row.split("│") if cell.strip()]


def test_the_engine_logs_count_fills_the_total_when_no_server_reported_one() -> None:
    report = UsageReport(
        roles={"actor": RoleUsage(calls=3, prompt_tokens=900)},
        engine=PromptEvalStats(
            completions=3, evaluated_prompt_tokens=400, reused_prompt_tokens=500
        ),
    )
    text = _printed(report)
    assert _total_row(text)[:4] == ["total", "3", "900", "500"]
    assert "engine's log counted 500 prompt tokens served from its prefix cache" in text


def test_reported_cached_tokens_are_shown_as_they_are() -> None:
    report = UsageReport(
        roles={"actor": RoleUsage(calls=2, prompt_tokens=600, cached_prompt_tokens=250)},
        engine=PromptEvalStats(completions=2, reused_prompt_tokens=999),
    )
    text = _printed(report)
    assert _total_row(text)[:4] == ["total", "2", "600", "250"]
    assert "engine's log" not in text


def test_prefix_reloads_are_shown_with_what_to_change() -> None:
    evicted = UsageReport(
        roles={"actor": RoleUsage(calls=2)}, engine=PromptEvalStats(prefix_reloads=7)
    )
    assert "prefix slots: 7 chat requests" in _printed(evicted)
    assert "n_parallel" in _printed(evicted)
    steady = UsageReport(roles={"actor": RoleUsage(calls=2)}, engine=PromptEvalStats())
    assert "prefix slots" not in _printed(steady)
