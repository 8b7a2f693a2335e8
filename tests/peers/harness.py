"""The tiny check harness the synchronous peer scripts share.

Each check is a function that raises on failure; the tally ends in the
`<peer>: N passed, M failed` line that run.sh and CI read.
"""

from __future__ import annotations

from typing import Callable


class Checks:
    def __init__(self, peer: str) -> None:
        self.peer = peer
        self.passed = 0
        self.failed = 0

    def check(self, name: str, fn: Callable[[], None]) -> None:
        try:
            fn()
            self.passed += 1
            print(f"  ok   {name}", flush=True)
        except AssertionError as e:
            self.failed += 1
            print(f"  FAIL {name} -- assertion: {e}", flush=True)
        except Exception as e:  # noqa: BLE001 - any failure is a failed check
            self.failed += 1
            print(f"  FAIL {name} -- {type(e).__name__}: {e}", flush=True)

    def finish(self) -> int:
        """Prints the tally; the exit code fails on any failure or on no check at all."""
        print(f"{self.peer}: {self.passed} passed, {self.failed} failed")
        return 0 if self.failed == 0 and self.passed > 0 else 1
