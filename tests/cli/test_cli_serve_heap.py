"""`tunemem serve` moves the start-up heap out of the collector's reach before it serves."""

from __future__ import annotations

import gc
import weakref

from tunemem.cli.serve import freeze_startup_heap


def test_startup_heap_is_frozen_after_its_garbage_is_collected() -> None:
    class Cycle:
        pass

    gc.unfreeze()
    try:
        garbage = Cycle()
        garbage.me = garbage  # type: ignore[attr-defined]
        dead = weakref.ref(garbage)
        del garbage
        assert dead() is not None  # only the cycle collector frees it
        freeze_startup_heap()
        assert dead() is None  # collected, not frozen for the life of the server
        assert gc.get_freeze_count() > 1000  # the interpreter's own start-up objects at least
    finally:
        gc.unfreeze()
