"""Fitting the toy models to logged trajectories (issue 6). Never imports torch or empirical."""
