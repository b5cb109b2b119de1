"""The estimators: per-run fits of the toy models (model_fit, model_params, sim_fit), the pooled
laws (laws, pooled_law, pooled, discrepancy, baselines), event times with censoring (censored,
event_laws), curves, the turn, intervals, the least-squares engine every fit shares (engine), and
every estimator and law by name (registry). Imports no other part of fitting."""
