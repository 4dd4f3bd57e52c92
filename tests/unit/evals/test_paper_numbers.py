"""The paper's numbers in `evals/paper/table*.json` against the paper's text.

Without the text: every table file loads, every cell of its layout holds a number or the reason
it is missing, a copied cell equals its original, and the numbers the paper derives from its
own cells (Table 5's right signs and separation, the differences between two stored cells)
agree with the stored cells.

With the text (`$GRSE_PAPERS/grse.txt` or `../shared/papers/grse.txt` beside the repository;
skipped, saying so, when neither is present): every stored number is printed on the line it
cites, and every number printed on a cited line is stored or excluded with a reason, occurrence
by occurrence."""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from grse_graph.errors import ConfigError
from grse_graph.reproduce.paper import (
    NOT_IN_TEXT,
    PAPER_TABLES,
    PaperCell,
    PaperTable,
    load_paper,
)
from grse_graph.reproduce.settings import default_paper_dir

REPO_ROOT = Path(__file__).resolve().parents[3]

LINK = re.compile(r"\[[^\]]*\]\((?:[^()\"]|\"[^\"]*\")*\)")
"""A Markdown link: a cross-reference (table, figure, section number) or a citation (authors,
year); its text is a reference, not a reported number."""
MODEL = re.compile(r"(?:Qwen/)?Qwen[\w.\-]*|(?:google/)?[Gg]emma[\w.\-]*")
"""A model name (`Qwen3.8-27B`, `Gemma-4-31B-it`, `Gemma4`): its digits are part of the name."""
NUMBER = re.compile(r"(?:(?P<sign>[+\-−])|(?<![\w{^\\]))(?P<digits>\d+(?:,\d{3})*(?:\.\d+)?)")
"""A printed number with its sign (`+0.18` after `help`, `-1.8` after `2.3`); digits glued to a
word (`F1`, `u_{1}`, `D3`) are not numbers."""


def printed_numbers(text: str) -> Counter[float]:
    """The numbers printed on one line of the text, with their multiplicity."""
    text = MODEL.sub(" ", LINK.sub(" ", text))
    found: Counter[float] = Counter()
    for match in NUMBER.finditer(text):
        value = float(match["digits"].replace(",", ""))
        found[round(-value if match["sign"] in ("-", "−") else value, 6)] += 1
    return found


def _key(value: float | str) -> float:
    return round(float(str(value).replace("−", "-")), 6)


def tables() -> list[PaperTable]:
    return [load_paper(name) for name in PAPER_TABLES]


def stored_cells(paper: PaperTable) -> Iterator[tuple[str, str, PaperCell]]:
    for row, cells in paper.cells.items():
        for column, cell in cells.items():
            yield row, column, cell


# -- without the paper's text --------------------------------------------------------------


def test_every_layout_cell_is_a_number_or_missing_with_a_reason() -> None:
    for paper in tables():
        rows = [r.key for r in paper.layout.rows]
        columns = [c.key for c in paper.layout.columns]
        assert rows and columns, paper.table
        assert list(paper.cells) == rows, paper.table
        for row in rows:
            assert list(paper.cells[row]) == columns, (paper.table, row)
            for column in columns:
                cell = paper.cell(row, column)
                if cell.missing is not None:
                    assert cell.missing.strip(), (paper.table, row, column)
                    assert cell.shown is None
                else:
                    assert cell.shown is not None and cell.line is not None


def test_every_table_stores_numbers_and_labels_are_unique() -> None:
    for paper in tables():
        assert paper.available, paper.table
        labels = [r.label for r in paper.layout.rows]
        assert len(set(labels)) == len(labels), paper.table
        missing = [c for _, _, c in stored_cells(paper) if c.missing == NOT_IN_TEXT]
        given = [c for _, _, c in stored_cells(paper) if c.missing is None]
        assert given, paper.table
        # A table printed whole has no cell missing for want of text.
        if "prints this table whole" in paper.where:
            assert not missing, paper.table


def test_a_copied_cell_equals_its_original() -> None:
    papers = {p.table: p for p in tables()}
    copies = 0
    for paper in papers.values():
        for _, _, cell in stored_cells(paper):
            if cell.copy_of is None:
                continue
            copies += 1
            original = papers[cell.copy_of.table].cell(cell.copy_of.row, cell.copy_of.column)
            assert (cell.value, cell.sd, cell.line) == (original.value, original.sd, original.line)
    assert copies


def test_stated_differences_agree_with_the_cells_they_join() -> None:
    checked = 0
    for paper in tables():
        for difference in paper.differences:
            for column in difference.columns:
                high = paper.cell(difference.row, column).value
                low = paper.cell(difference.minus, column).value
                if high is None or low is None:
                    continue
                checked += 1
                assert high - low == pytest.approx(difference.value, abs=0.051), difference
    assert checked >= 3  # Table 1's three differences join stored cells


def test_table5_right_signs_and_separation_follow_from_its_u1_cells() -> None:
    paper = load_paper("table5")
    skills = [r.key for r in paper.layout.rows if "|" in r.key]
    for method in ("GRSE", "MASkills"):
        by_kind: dict[str, list[float]] = {"help": [], "harm": []}
        for skill in skills:
            kind = paper.cell(skill, "kind").text
            u1 = paper.cell(skill, f"{method}:u1").value
            assert kind is not None and u1 is not None
            if kind in by_kind:
                by_kind[kind].append(u1)
        right = sum(u > 0 for u in by_kind["help"]) + sum(u < 0 for u in by_kind["harm"])
        assert paper.value("correct_signs", f"{method}:u1") == right
        separation = statistics.fmean(by_kind["help"]) - statistics.fmean(by_kind["harm"])
        assert paper.value("separation", f"{method}:u1") == pytest.approx(separation, abs=0.005)


def test_a_number_without_its_line_or_a_cell_off_the_layout_is_one_config_error(
    tmp_path: Path,
) -> None:
    shutil.copytree(default_paper_dir(), tmp_path, dirs_exist_ok=True)
    path = tmp_path / "table1.json"
    original = json.loads(path.read_text(encoding="utf-8"))
    document = json.loads(json.dumps(original))
    del document["cells"]["GRSE"]["Qwen3.8:f1"]["line"]
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"table1\.json: .*line of the text"):
        load_paper("table1", tmp_path)
    document = json.loads(json.dumps(original))
    del document["cells"]["IO"]
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"not the layout's"):
        load_paper("table1", tmp_path)


def test_value_reads_a_cell_and_is_none_off_the_layout() -> None:
    assert load_paper("table1").value("GRSE", "Qwen3.8:f1") == 83.7
    assert load_paper("table1").value("GRSE", "em") is None
    assert load_paper("table2").sd("GRSE", "Qwen3.8|multi-hop:f1") == 0.8
    assert load_paper("table3").value("LoCoMo|Gemma4|GRSE", "dc_count") == "61 (5)"
    assert load_paper("table5").value("Agent 2|verbatim guard", "GRSE:fate") == "pruned@3"


def test_the_number_reader_keeps_signs_and_skips_names_links_and_glued_digits() -> None:
    line = (
        "GRSE+7.4+6.0 17{\\to}7 34 (9) with Qwen3.8-27B and Gemma4, 45.4M, 22%, F1, u_{1}, "
        'irr.0.00, harm-0.12, ([Yu et al., 2025](https://x.org/a#b "T 1 ‣ 5.2 (x)"))'
    )
    assert printed_numbers(line) == Counter(
        {7.4: 1, 6.0: 1, 17.0: 1, 7.0: 1, 34.0: 1, 9.0: 1, 45.4: 1, 22.0: 1, 0.0: 1, -0.12: 1}
    )


# -- against the paper's text --------------------------------------------------------------


@pytest.fixture(scope="module")
def paper_lines() -> list[str]:
    """The lines of grse.txt: `$GRSE_PAPERS/grse.txt` or `../shared/papers/grse.txt`."""
    configured = os.environ.get("GRSE_PAPERS")
    folder = Path(configured) if configured else REPO_ROOT.parent / "shared" / "papers"
    path = folder / "grse.txt"
    if not path.is_file():
        pytest.skip(f"the paper's text is not present ({path}; set $GRSE_PAPERS)")
    return path.read_text(encoding="utf-8").split("\n")


def _line(lines: list[str], number: int) -> str:
    assert 1 <= number <= len(lines), f"grse.txt has no line {number}"
    return lines[number - 1]


def claims(paper: PaperTable) -> Iterator[tuple[int, float, str]]:
    """(line, number, what) for every number this table says the text prints, once per
    printing: each cell's numbers on its line and its quotes, each difference, each
    exclusion. A copied cell claims nothing (its original does)."""
    for row, column, cell in stored_cells(paper):
        if cell.copy_of is not None or cell.line is None:
            continue
        numbers = cell.numbers()
        where = f"{paper.table} [{row}][{column}]"
        for name, value in numbers.items():
            yield cell.line, value, f"{where}.{name}"
        for quote in cell.quotes:
            for name in quote.fields or list(numbers):
                yield quote.line, numbers[name], f"{where}.{name} (quoted)"
    for difference in paper.differences:
        what = f"{paper.table} {difference.row} - {difference.minus} {difference.columns}"
        for line in (difference.line, *difference.also):
            yield line, difference.value, what
    for excluded in paper.excluded:
        yield excluded.line, _key(excluded.number), f"{paper.table} excluded: {excluded.reason}"


@pytest.mark.shared_data
def test_every_stored_number_is_printed_on_its_line(paper_lines: list[str]) -> None:
    problems = []
    for paper in tables():
        for line, value, what in claims(paper):
            if printed_numbers(_line(paper_lines, line))[_key(value)] == 0:
                problems.append(f"{what}: {value:g} is not on grse.txt:{line}")
        for row, column, cell in stored_cells(paper):
            if (
                cell.text is not None
                and cell.line is not None
                and (cell.text not in _line(paper_lines, cell.line))
            ):
                problems.append(f"{paper.table} [{row}][{column}]: {cell.text!r} not there")
    assert not problems, "\n".join(problems)


@pytest.mark.shared_data
def test_every_number_on_a_cited_line_is_stored_or_excluded(paper_lines: list[str]) -> None:
    claimed: dict[int, Counter[float]] = {}
    for paper in tables():
        for line, value, _ in claims(paper):
            claimed.setdefault(line, Counter())[_key(value)] += 1
    problems = []
    for line, numbers in sorted(claimed.items()):
        printed = printed_numbers(_line(paper_lines, line))
        unaccounted = printed - numbers
        overclaimed = numbers - printed
        if unaccounted:
            problems.append(f"grse.txt:{line}: neither stored nor excluded: {dict(unaccounted)}")
        if overclaimed:
            problems.append(
                f"grse.txt:{line}: claimed more often than printed: {dict(overclaimed)}"
            )
    assert not problems, "\n".join(problems)


@pytest.mark.shared_data
def test_a_table_printed_whole_is_stored_cell_by_cell(paper_lines: list[str]) -> None:
    # Tables 3 and 5 are printed whole: every number on their body lines is one of their cells.
    for name, lines in (("table3", range(211, 223)), ("table5", range(244, 254))):
        paper = load_paper(name)
        cells: Counter[float] = Counter()
        for _, _, cell in stored_cells(paper):
            if cell.line in lines:
                cells.update(_key(v) for v in cell.numbers().values())
        excluded = Counter(_key(e.number) for e in paper.excluded if e.line in lines)
        printed: Counter[float] = Counter()
        for number in lines:
            printed.update(printed_numbers(_line(paper_lines, number)))
        assert printed == cells + excluded, name
