"""The estimators: per-run and pooled fits of the toy models, the laws, curves and the turn. Imports no
other part of fitting."""
