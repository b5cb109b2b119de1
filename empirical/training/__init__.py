"""A training run: its settings (config, config_checks, presets), its folder (run, checkpoint,
runlog, lock), its evaluation at each checkpoint (evaluate, protocols, batched_sampling), the loop
(train) and many runs in one process (stacked)."""
