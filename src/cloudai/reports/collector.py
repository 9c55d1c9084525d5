"""``paused()``: the cyclic garbage collector off while records are read and a report is built.

Reading a run allocates a record per step (10^4-10^5 of them, each with its dicts) and a report adds its
charts' lists, with little cyclic garbage among them: the collector's full passes, each over every live
object, found almost nothing, made reading 10 000 steps take 1.5-2x as long and were ~15 % of a report's time.
The few reference cycles left wait for the next collection once the collector is back on.

On exit everything allocated inside goes to the oldest generation (``gc.freeze`` then ``gc.unfreeze``: two list
splices) before the collector is back on: else the first allocation after would start a young-generation pass
over all of it at once (10^5 steps: ~500 000 objects, 0.05-0.07 s of CPU) to find almost nothing. Its few
cycles are collected by the next full collection instead. Skipped when some caller froze objects of its own
(``gc.get_freeze_count()``), which ``unfreeze`` would thaw too.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """Collector off inside; on exit back on if it was on (nested uses and callers that turned it off keep theirs)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if not gc.get_freeze_count():  # no one else's frozen objects to thaw with ours
                gc.freeze()  # what was allocated inside: straight to the oldest generation (see above)
                gc.unfreeze()
            gc.enable()
