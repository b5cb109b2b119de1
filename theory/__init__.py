"""The toy theory: energy landscapes in concept space and their gradient flows (the log they write:
``core``).

Three rooms, each importing only the ones before it: ``theory.models`` (the landscapes and the
structured identity mapping: what flows), ``theory.solvers`` (how a flow is integrated: every
integration goes through ``theory.solvers.integrate``), ``theory.cli`` (the command line's flags,
presets and figures); on top the command, ``python -m theory.simulate``. Import from the modules;
the package files stay empty so that importing one model never pulls in the others' sympy or numba.
"""
