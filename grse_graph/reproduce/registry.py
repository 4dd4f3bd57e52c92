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
    tables={"table1": "Table 1: HotpotQA (distractor, hard) test F1 / EM"},
    reproduces=(
        "Table 1 of the GRSE paper: HotpotQA distractor (hard) test F1 and EM of GRSE, GRSE w/o "
        "structure, MASkills, the empty library, IO, CoT, CoT-SC (5 samples) and Self-Refine "
        "(at most 3 rounds), per actor (one --config per actor), mean ± SD over seeds"
    ),
    cost=(
        "per actor and seed: 3 training runs (T = 5, G = 4, 20 questions per iteration, the "
        "whole validation split) and their tests, plus the empty library and 4 baselines on "
        "the test split; --dry-run prints the estimated calls and tokens per role"
    ),
    tasks=(t1_hotpotqa.TASK,),
    plan=t1_hotpotqa.plan,
    tabulate=t1_hotpotqa.tabulate,
)

TABLE2 = TableDef(
    name="table2",
    script="table2_locomo.py",
    tables={"table2": "Table 2: LoCoMo per category, test F1 / BLEU"},
    reproduces=(
        "Table 2 of the GRSE paper: LoCoMo test F1 and BLEU per category (multi-hop, temporal, "
        "open-domain, single-hop) and their Avg. for GRSE and MASkills trained per category, "
        "the empty library and the full-context baseline (32-token answers)"
    ),
    cost=(
        "per actor and seed: 8 per-category training runs (T = 5, G = 4, 24 questions per "
        "iteration, the whole validation split: 68/60/21/159) and their tests, plus the empty "
        "library and full-context per category (842 test questions in all)"
    ),
    tasks=(t2_locomo.TASK,),
    plan=t2_locomo.plan,
    tabulate=t2_locomo.tabulate,
)

TABLE3 = TableDef(
    name="table3",
    script="table3_transitions.py",
    tables={"table3": "Table 3: answer transitions empty -> GRSE (questions), ΔF1 (points)"},
    reproduces=(
        "Table 3 of the GRSE paper: per-question answer transitions (declined / wrong / correct) "
        "from the empty to the GRSE-trained library, ΔF1 and the evidence column, on HotpotQA "
        "and each LoCoMo category, with the transition bars"
    ),
    cost="nothing beyond Tables 1 and 2: it reads their GRSE runs (made here if missing)",
    tasks=("hotpotqa", "locomo"),
    plan=t3_transitions.plan,
    tabulate=t3_transitions.tabulate,
)

TABLE45 = TableDef(
    name="table4_5",
    script="table4_5_repair.py",
    tables={
        "table4": "Table 4: repair of a planted library, test score (points) planted -> trained",
        "table5": "Table 5: planted skills, first credit u1 and fate per method",
    },
    reproduces=(
        "Tables 4 and 5 and Figure 4 of the GRSE paper: from a planted library (per agent "
        "helpful and harmful skills; default the demo's planted.json, --planted FILE for "
        "another in the same format), GRSE, GRSE with probe credit and MASkills train; Table 4 "
        "gives planted and trained test scores, the difference, abstention and what was "
        "removed or kept, Table 5 each planted skill's first credit u1 (sign) and fate"
    ),
    cost=(
        "per actor and seed: 3 training runs of the demo's repair size (1 iteration, 2 "
        "questions, G = 4, 6 validation questions; probe credit 30 team runs) and their tests "
        "on the planted library's test split (demo: 24 questions; the planted library is "
        "tested once); on the embedded 0.5B engine about 20-30 minutes per method"
    ),
    tasks=("demo",),
    plan=t45_repair.plan,
    tabulate=t45_repair.tabulate,
)

TABLE6 = TableDef(
    name="table6",
    script="table6_transfer.py",
    tables={"table6": "Table 6: transfer between HotpotQA and LoCoMo multi-hop (test F1)"},
    reproduces=(
        "Table 6 of the GRSE paper: GRSE libraries trained on HotpotQA tested on LoCoMo "
        "multi-hop and the other way round, beside their in-domain scores and the empty library"
    ),
    cost=(
        "reads T1's GRSE runs and T2's multi-hop GRSE runs (made here if missing), plus one "
        "cross-domain test per seed and direction"
    ),
    tasks=("hotpotqa", "locomo"),
    plan=t6_transfer.plan,
    tabulate=t6_transfer.tabulate,
)

TABLE9 = TableDef(
    name="table9",
    script="table9_typing.py",
    tables={"table9": "Table 9: learned HotpotQA skills typed by the critic model (temperature 0)"},
    reproduces=(
        "Table 9 of the GRSE paper: the skills GRSE learned on HotpotQA (Table 1's runs), each "
        "typed by the critic model at temperature 0, with the share and mean length per type"
    ),
    cost="T1's GRSE runs (made here if missing) plus one critic call per learned skill",
    tasks=("hotpotqa",),
    plan=t9_typing.plan,
    tabulate=t9_typing.tabulate,
)

TABLE10 = TableDef(
    name="table10",
    script="table10_ablations.py",
    tables={"table10": "Table 10: ablations on one mixed LoCoMo library (test F1)"},
    reproduces=(
        "Table 10 of the GRSE paper: GRSE and its ablations (w/o structure, G = 1, DAPO filter, "
        "w/ label) each training one library on all four LoCoMo categories (32 questions per "
        "iteration), tested per category with the Avg."
    ),
    cost=(
        "per actor and seed: 5 mixed-category training runs (T = 5, 32 questions per "
        "iteration, the whole 308-question validation split) and their tests on the 842 test "
        "questions, plus the empty library once"
    ),
    tasks=(t10_ablations.TASK,),
    plan=t10_ablations.plan,
    tabulate=t10_ablations.tabulate,
)

TABLE11 = TableDef(
    name="table11",
    script="table11_cost.py",
    tables={
        "table11": "Table 11: training cost per role (HotpotQA, one training run incl. its tests)"
    },
    reproduces=(
        "Table 11 of the GRSE paper: calls, prompt and completion tokens and model time per role "
        "(actor, critic, optimizer) and the training wall time of GRSE, GRSE w/o structure and "
        "MASkills on HotpotQA"
    ),
    cost="nothing beyond Table 1: it reads its training runs (made here if missing)",
    tasks=("hotpotqa",),
    plan=t11_cost.plan,
    tabulate=t11_cost.tabulate,
)

TABLES: dict[str, TableDef] = {
    table.name: table
    for table in (TABLE1, TABLE2, TABLE3, TABLE45, TABLE6, TABLE9, TABLE10, TABLE11)
}
