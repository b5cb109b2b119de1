"""The analyses built on the estimators: study, capability, ladder, events and forecasts, prediction and
leave-out, covariates. Imports fitting.estimators.registry, never the commands on top."""
