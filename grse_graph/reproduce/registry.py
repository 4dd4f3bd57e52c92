"""The tables `grse reproduce` and the `evals/` scripts know, by name: each paper table's
script, result tables, help (what it reproduces and costs), tasks, runs and content."""

from __future__ import annotations

from .tables import (
    t1_hotpotqa,
    t2_locomo,
    t3_transitions,
    t6_transfer,
    t9_typing,
    t10_ablations,
    t11_cost,
    t45_repair,
)
from .tables.base import TableDef

TABLE1 = TableDef(
    name="table1",
    script="table1_hotpotqa.py",
    tables={"table1": "Table 1: HotpotQA (distractor, hard) test F1 per actor"},
    reproduces=(
        "Table 1 of the GRSE paper: HotpotQA distractor (hard) test F1 of IO, CoT, CoT-SC (5 "
        "samples), Self-Refine (at most 3 rounds), the empty library, MASkills, GRSE w/o "
        "structure and GRSE, one column per actor (one --config per actor: the paper's Qwen3.8 "
        "and Gemma4), mean ± SD over seeds; EM beside it as ours"
    ),
    cost=(
        "per actor and seed: 3 training runs (T = 5, G = 4, 20 questions per iteration, the "
        "whole validation split) and their tests, plus the empty library and 4 baselines on "
        "the test split; --dry-run prints the estimated calls and tokens per role"
    ),
    tasks=(t1_hotpotqa.TASK,),
    plan_runs=t1_hotpotqa.plan,
    tabulate=t1_hotpotqa.tabulate,
)

TABLE2 = TableDef(
    name="table2",
    script="table2_locomo.py",
    tables={"table2": "Table 2: LoCoMo per category, test F1 / BLEU per actor"},
    reproduces=(
        "Table 2 of the GRSE paper: LoCoMo test F1 and BLEU per category (multi-hop, temporal, "
        "open-domain, single-hop) and their Avg. for the full-context baseline (32-token "
        "answers), the empty library, and MASkills, GRSE w/o structure and GRSE trained per "
        "category, one column group per actor"
    ),
    cost=(
        "per actor and seed: 12 per-category training runs (T = 5, G = 4, 24 questions per "
        "iteration, the whole validation split: 68/60/21/159) and their tests, plus the empty "
        "library and full-context per category (842 test questions in all)"
    ),
    tasks=(t2_locomo.TASK,),
    plan_runs=t2_locomo.plan,
    tabulate=t2_locomo.tabulate,
)

TABLE3 = TableDef(
    name="table3",
    script="table3_transitions.py",
    tables={"table3": "Table 3: answer transitions from the empty to the final library"},
    reproduces=(
        "Table 3 of the GRSE paper: per task (HotpotQA; LoCoMo with its four categories pooled) "
        "and actor, MASkills and GRSE (first runs): ΔF1, the contributions to it of the "
        "declined-to-correct, wrong-to-correct and correct-to-wrong questions, the declined "
        "and no-evidence shares before -> after and #D->C (without evidence in brackets); the "
        "empty library's answers are iteration 0 of the same GRSE run; per-category rows and "
        "the contribution bars follow"
    ),
    cost="nothing beyond Tables 1 and 2: it reads their first GRSE and MASkills runs",
    tasks=("hotpotqa", "locomo"),
    plan_runs=t3_transitions.plan,
    tabulate=t3_transitions.tabulate,
    first_run_only=True,
)

TABLE45 = TableDef(
    name="table4_5",
    script="table4_5_repair.py",
    tables={
        "table4": "Table 4: repairing a perturbed library, test F1 / BLEU, ΔF1 and abstention",
        "table5": "Table 5: the planted skills' kind, u1 and fate per method",
    },
    reproduces=(
        "Tables 4 and 5 of the GRSE paper in a named design (--design paper, the default: "
        "LoCoMo single-hop from the paper's perturbed library, per agent one helpful and two "
        "harmful or irrelevant skills; --design demo: the demo task's repair, sized for a "
        "2-core CPU; --planted FILE replaces the design's library): Table 4 gives F1, BLEU, "
        "ΔF1 and the abstention rate of the perturbed library, its helpful skills alone and "
        "the final libraries of MASkills and GRSE (with --additions also GRSE + probe, the "
        "project's addition, as its own row); Table 5 each planted skill's kind, u1 and fate "
        "per method, the right signs and the helpful-harmful separation"
    ),
    cost=(
        "per actor, one run per method (the paper's): the perturbed and the helpful-alone "
        "libraries on the test split (single-hop: 453 questions), and one training run per "
        "method (paper design: T = 5, G = 4, 24 questions per iteration, the whole 159-question "
        "validation split, then its test; demo design: 1 iteration of 2 questions); "
        "--iterations, --batch-size, --validation-size and --limit size it for a machine"
    ),
    tasks=("locomo", "demo"),
    plan_runs=t45_repair.plan,
    tabulate=t45_repair.tabulate,
    first_run_only=True,
)

TABLE6 = TableDef(
    name="table6",
    script="table6_transfer.py",
    tables={"table6": "Table 6: transfer between HotpotQA and LoCoMo multi-hop (test F1)"},
    reproduces=(
        "Table 6 of the GRSE paper: GRSE and MASkills libraries trained on HotpotQA tested on "
        "LoCoMo multi-hop and the other way round (transfer), beside the in-domain libraries "
        "and the empty library of the target"
    ),
    cost=(
        "reads T1's and T2's multi-hop GRSE and MASkills runs (made here if missing), plus one "
        "cross-domain test per method, seed and direction"
    ),
    tasks=("hotpotqa", "locomo"),
    plan_runs=t6_transfer.plan,
    tabulate=t6_transfer.tabulate,
)

TABLE9 = TableDef(
    name="table9",
    script="table9_typing.py",
    tables={"table9": "Table 9: final skill libraries by primary skill type"},
    reproduces=(
        "Table 9 of the GRSE paper: the final libraries of GRSE, GRSE w/o structure and "
        "MASkills on HotpotQA and LoCoMo (first runs; LoCoMo's per-category libraries pooled), "
        "each skill typed by the critic model at temperature 0 (format, retrieval, "
        "verification, reasoning, abstention, generic): n, the share per type and the mean "
        "words of description and body"
    ),
    cost=(
        "the first training runs of T1 and T2 (made here if missing) plus one critic call per "
        "learned skill"
    ),
    tasks=("hotpotqa", "locomo"),
    plan_runs=t9_typing.plan,
    tabulate=t9_typing.tabulate,
    first_run_only=True,
)

TABLE10 = TableDef(
    name="table10",
    script="table10_ablations.py",
    tables={"table10": "Table 10: ablations on one shared LoCoMo library (test F1 / BLEU)"},
    reproduces=(
        "Table 10 of the GRSE paper: GRSE and its ablations (w/o structure, G = 1, DAPO filter, "
        "w/ label) each training one library on all four LoCoMo categories (32 questions per "
        "iteration), one run per setting, tested with F1 and BLEU per category, over all "
        "questions (All) and averaged over the categories (Avg.), beside the empty library"
    ),
    cost=(
        "per actor: 5 mixed-category training runs (first seed alone; T = 5, 32 questions per "
        "iteration, the whole 308-question validation split) and their tests on the 842 test "
        "questions, plus the empty library once"
    ),
    tasks=(t10_ablations.TASK,),
    plan_runs=t10_ablations.plan,
    tabulate=t10_ablations.tabulate,
    first_run_only=True,
)

TABLE11 = TableDef(
    name="table11",
    script="table11_cost.py",
    tables={"table11": "Table 11: training cost of the main-result runs"},
    reproduces=(
        "Table 11 of the GRSE paper: the actor's tokens of training rollouts, validation and in "
        "all, and the training time of GRSE and MASkills on HotpotQA and LoCoMo (the four "
        "per-category runs summed), per actor, mean ± SD over seeds; the critic's and "
        "optimizer's usage and GRSE w/o structure beside them as ours"
    ),
    cost="nothing beyond Tables 1 and 2: it reads their training runs (made here if missing)",
    tasks=("hotpotqa", "locomo"),
    plan_runs=t11_cost.plan,
    tabulate=t11_cost.tabulate,
)

TABLES: dict[str, TableDef] = {
    table.name: table
    for table in (TABLE1, TABLE2, TABLE3, TABLE45, TABLE6, TABLE9, TABLE10, TABLE11)
}
