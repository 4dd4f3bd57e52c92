"""Reproduce the GRSE paper's tables: paper settings and numbers as data (`evals/paper/`), run
manifests with stable ids (reused, resumed), one shared executor for every kind of run, and
tables rendered with mean ± SD beside the paper's numbers. The `evals/` scripts and
`grse reproduce TABLE` call `grse_graph.reproduce.script.main`."""
