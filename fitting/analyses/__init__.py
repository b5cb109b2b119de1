"""The analyses built on the estimators: capability, study and study_levels, ladder, report,
synthetic (cases with known answers), covariates, prediction and leave_out, events and
event_records, outside_pool and outside_score (the registered test), forecast_methods. Imports
fitting.estimators (the floor below), never the commands on top."""
