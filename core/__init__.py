"""The ground floor every part stands on: the trajectory log's format (``core.trajectory``, its
specification), typed JSON records (``core.record``), the folders the parts hand each other
(``core.layout``), safe files and locks (``core.files``), the command-line conventions
(``core.cli``), provenance stamps, progress lines and the plotting base. It imports nothing else of
this package, and neither sympy, numba nor torch.

Import from the modules; this file stays empty.
"""
