"""Fitting the toy models to logged trajectories (issue 6). Never imports torch or empirical.

The commands are the modules on top (``python -m fitting.fit``, ``turn``, ``capability``, ``study``,
``ladder``, ``masking``, ``predict``, ``sim_joint``, ``forecast``, ``forecast_calibration``,
``outside``); below them two floors, each importing only the one under it: ``analyses`` (study,
capability, ladder, events, prediction, ...) on ``estimators`` (per-run and pooled fits, laws,
curves, the turn, the least-squares engine).
"""
