"""The orchestration floor: commands that run the other parts in order (train, then read, then score). Nothing
below imports it."""
