"""The command line of ``python -m theory.simulate``: its flags (``args``), the default simulations
(``presets``), the structured identity mapping's presets and models (``swingby``) and their figure
(``swingby_plot``)."""
