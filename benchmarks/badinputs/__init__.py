"""The bad-input table of docs/reliability.md, in pieces: the cases of each part of the package (cases_*.py)
and the fixtures they share (fixtures.py). benchmarks/bad_inputs.py runs them."""
