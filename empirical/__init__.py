"""Real training: the conditional VDM on synthetic concept images, logged as concept-space trajectories.

torch is imported only inside this package. The data-generating process (``data``, ``render``) and the
sample grids (``grid``) need numpy and matplotlib only.
"""
