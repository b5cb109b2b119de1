"""How a flow is integrated: ``integrate`` (the one verb: exact, scipy or the batched numba DOPRI by
size), ``dopri`` (the integrator), ``kernels`` (its compiled kernels cached across processes),
``exact`` (flows linear in z, in closed form), ``two_layer`` (the structured identity mapping's
two-layer model)."""
