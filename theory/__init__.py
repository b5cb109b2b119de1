"""The toy theory: energy landscapes in concept space, their gradient flows, and the trajectory log.

Import from the modules (``theory.models``, ``theory.integrate``, ``theory.trajectory``); this file
stays empty so that reading a log never pulls in sympy or numba.
"""
