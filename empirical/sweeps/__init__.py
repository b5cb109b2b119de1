"""Grids of runs: the plan (plan), what a job runs (jobs), the executors (executor) and the runs as tables
(collect)."""
