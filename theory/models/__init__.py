"""What flows: energy landscapes in concept space (``landscape``; the paper's models in ``paper``; a
user's energy parsed by ``expression``; the linear form that ``theory.solvers.exact`` integrates,
``linear_form``) and the structured identity mapping (``identity_mapping``). Nothing here
integrates: see ``theory.solvers``."""
