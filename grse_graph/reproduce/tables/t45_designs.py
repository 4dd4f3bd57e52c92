"""The designs Tables 4 and 5 run, by name (`--design NAME`, default `paper`).

A design is the experiment of the repair study: its task and category, the planted library the
methods start from, how each method's training run is configured (its sizes) and what it
declares where it differs from the paper. Two ship:

- `paper`: the paper's (§5.3, App. C): LoCoMo single-hop, per agent one helpful skill and two
  harmful or irrelevant ones (`locomo_planted`), every other setting that of the per-category
  runs (Table 8: T = 5, 24 training questions per iteration, δ = 0.02, L = 4; grse.txt:405);
- `demo`: the demo task's repair, the one that fits a 2-core CPU with the embedded model
  (`demo_planted`, the demo's `repair_config` sizes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from grse_graph.errors import GrseError
from grse_graph.probes import ProbeSettings
from grse_graph.reproduce.context import Actor, TableContext
from grse_graph.reproduce.specs import Training, tool_protocol, training_config
from grse_graph.tasks.planted import PlantedLibrary, demo_planted, locomo_planted
from grse_graph.training.config import LOOP_ADDITIONS, TrainConfig, method_additions
from grse_graph.training.demo import REPAIR_SETTINGS, repair_config


@dataclass(frozen=True)
class MethodRun:
    """One training run of the repair study: the credit method, probe credit on, the seed."""

    method: str
    probe: bool
    seed: int


ConfigBuilder = Callable[[TableContext, Actor, PlantedLibrary, Training], dict[str, Any]]
"""How a design configures one method's training run from the planted library: the config's
fields as JSON, without probe credit (`RepairDesign.train_config` adds the design's)."""


@dataclass(frozen=True)
class RepairDesign:
    """One experiment of Tables 4 and 5 (see the module docstring)."""

    name: str
    about: str
    """One line for the header: what the design is."""
    task: str
    category: str | None
    planted: Callable[[], PlantedLibrary]
    """The planted library shipped for it (`--planted FILE` replaces it, same task)."""
    config: ConfigBuilder
    probe: ProbeSettings
    """Probe credit of the `GRSE + probe (project addition)` row (with `--additions`)."""
    declared: tuple[str, ...]
    """Every difference from the paper the design itself makes, printed in the header."""
    paper_numbers: bool
    """Whether the paper's numbers stand beside ours (only where the experiment is the
    paper's)."""

    def train_config(
        self, ctx: TableContext, actor: Actor, planted: PlantedLibrary, run: MethodRun
    ) -> TrainConfig:
        """The config of one method's training run from `planted`, with the design's probe
        credit (`probe_settings`) when the run has it."""
        training = Training(self.task, self.category, run.method, "default", run.seed)
        dumped = self.config(ctx, actor, planted, training)
        if run.probe:
            dumped["probe"] = probe_settings(ctx, self).model_dump(mode="json")
        return TrainConfig.model_validate(dumped)


def probe_settings(ctx: TableContext, design: RepairDesign) -> ProbeSettings:
    """The design's probe credit, at the smoke size's questions and budget under `--smoke`."""
    if not ctx.smoke:
        return design.probe
    return design.probe.model_copy(update=ctx.settings.smoke.probe_sizes())


def _paper_config(
    ctx: TableContext, actor: Actor, planted: PlantedLibrary, training: Training
) -> dict[str, Any]:
    """The per-category run's config (Table 8 as `grse train` builds it, with the smoke size
    and the command line's sizes) starting from the planted libraries."""
    dumped = training_config(ctx, actor, training).model_dump(mode="json")
    dumped["init_libraries"] = planted.library_folders()
    return dumped


def _demo_config(
    ctx: TableContext, actor: Actor, planted: PlantedLibrary, training: Training
) -> dict[str, Any]:
    """The demo's repair config (`repair_config`), in the table's mode, at the smoke size
    under `--smoke`, with the command line's sizes over it."""
    config = repair_config(planted, training.method, probe=False)
    dumped: dict[str, Any] = config.model_dump(mode="json")
    dumped["data"] = ctx.data.get(planted.task)
    dumped["seed"] = training.seed
    if ctx.paper_mode:
        # Paper mode fills every project addition with off; the repair config names them on.
        for name in LOOP_ADDITIONS:
            dumped.pop(name, None)
        for name in method_additions(config.method):
            dumped["method"].pop(name, None)
        dumped["paper_mode"] = True
    # The training runs test their starting libraries in the evaluation runs' folders, so
    # their team calls tools the way those runs' team does (text in paper mode).
    dumped["tool_protocol"] = tool_protocol(ctx)
    if ctx.smoke:
        smoke = ctx.settings.smoke
        dumped.update(smoke.loop_sizes())
        if "group_size" in dumped["method"]:
            dumped["method"]["group_size"] = smoke.group_size
    return _overridden(ctx, dumped)


def _overridden(ctx: TableContext, dumped: dict[str, Any]) -> dict[str, Any]:
    """The config with the command line's loop sizes (`--iterations` ...) over it."""
    for key, value in ctx.train_overrides.items():
        if key == "group_size":
            if "group_size" in dumped["method"]:
                dumped["method"]["group_size"] = value
        else:
            dumped[key] = value
    return dumped


PAPER_PROBE = ProbeSettings(
    design="leave_one_out", questions=24, budget=24 * 7, split="train", confidence=0.8
)
"""The probe row of the paper design: leave-one-out (each planted skill masked alone, the
direct with/without comparison) over 24 training questions, the batch size, 7 runs each (the
full library and six masks), read at 80% as the demo's repair reads it (a screen whose
prunes the validation gate must still accept)."""

PAPER = RepairDesign(
    name="paper",
    about=(
        "design paper (the paper's, §5.3 and App. C): LoCoMo single-hop, GRSE and MASkills "
        "from the same perturbed library, every other setting that of the per-category runs "
        "(T = 5, 24 training questions per iteration, δ = 0.02, L = 4: grse.txt:405); "
        "--design demo is the demo task's repair, sized for a 2-core CPU"
    ),
    task="locomo",
    category="single-hop",
    planted=locomo_planted,
    config=_paper_config,
    probe=PAPER_PROBE,
    declared=(
        "planted library: skill bodies written by the project from App. C's descriptions; "
        "Figure 4 not in the text (grse.txt:399, 405, 411-417)",
        "planted skill names: the text's full names where it gives them "
        "(multi-hop-context-expansion, focused-latest-session-retrieval: grse.txt:413; "
        "verbatim-evidence-guard: grse.txt:417), else Table 5's label hyphenated "
        "(equation-solving, answer-fidelity, complete-sentence: grse.txt:247-250)",
        "helpful skills: the paper copies them from the final library of its first GRSE "
        "single-hop run (grse.txt:405); ours are written from their descriptions, not learned",
    ),
    paper_numbers=True,
)

DEMO = RepairDesign(
    name="demo",
    about=(
        "design demo (--design demo; the default, --design paper, is the paper's): the demo "
        "task's repair, sized for a 2-core CPU with the embedded model (the demo's "
        "repair_config: 1 iteration of 2 training questions, 6 validation questions, refine "
        "and prune every iteration, nothing induced or consolidated, the demo's caps), not "
        "LoCoMo single-hop"
    ),
    task="demo",
    category=None,
    planted=demo_planted,
    config=_demo_config,
    probe=ProbeSettings.model_validate(REPAIR_SETTINGS["probe"]),
    declared=(
        "planted library: the demo's four skills picked by measurement on the demo (per agent "
        "one helpful and one harmful, no irrelevant one), not the paper's six "
        "(grse.txt:243-251)",
        "BLEU: over the demo's conversation questions only (its passage questions report EM)",
        "paper numbers are not shown beside ours: the demo is not the paper's experiment",
    ),
    paper_numbers=False,
)

REPAIR_DESIGNS: Mapping[str, RepairDesign] = {design.name: design for design in (PAPER, DEMO)}
"""Every design Tables 4 and 5 can run, by `--design` name."""
DEFAULT_DESIGN = "paper"


def design_of(ctx: TableContext) -> RepairDesign:
    """The design `--design` names (default `paper`); an unknown name is one line."""
    name = ctx.design or DEFAULT_DESIGN
    design = REPAIR_DESIGNS.get(name)
    if design is None:
        raise GrseError(
            f"--design {name!r}: unknown repair design (known: {', '.join(REPAIR_DESIGNS)})"
        )
    return design
