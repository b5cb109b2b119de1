"""The orchestration floor: commands that run the other parts in order (train, then read, then
score). Nothing below imports it."""

import sys

# python -m pipeline.<command> without an optional extra it needs: one line naming the extra, as for
# empirical's
if sys.argv and sys.argv[0] == "-m":
    from empirical import _missing_extra

    sys.excepthook = _missing_extra
