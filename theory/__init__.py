"""The toy theory: energy landscapes in concept space and their gradient flows (the log they write: ``core``).

Import from the modules (``theory.models``, ``theory.integrate``); this file stays empty so that importing
one model never pulls in the others' sympy or numba.
"""
