"""Real training: the conditional VDM on synthetic concept images, logged as concept-space trajectories.

Not built yet (issues 3-5). torch is imported only inside this package.
"""
