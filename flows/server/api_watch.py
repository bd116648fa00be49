"""Whether the Prefect API a run talks to is still there.

When the server goes away mid-run, Prefect's client retries every call with
backing off (about a minute per call), so a run would hang for minutes and
then end without a report. ``ApiWatch`` probes the API's health while the run
runs: a server that refuses connections for ``lost_after`` seconds straight is
gone (a stopped or crashed server refuses at once), and one that does not
answer at all for ``silent_after`` seconds is lost too (a busy SQLite server
answers slowly, so that wait is long). Any HTTP answer, 503 included, means
the server is there.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable

LOST_AFTER_S = 10.0
SILENT_AFTER_S = 60.0
EVERY_S = 2.0
PROBE_TIMEOUT_S = 2.0

Probe = Callable[[str], str]  # "up", "refused" or "silent"


def probe_health(api_url: str) -> str:
    """``up`` when the API answers anything, ``refused`` when nothing listens, ``silent`` on no answer."""
    try:
        with urllib.request.urlopen(f"{api_url.rstrip('/')}/health", timeout=PROBE_TIMEOUT_S):  # noqa: S310
            return "up"
    except urllib.error.HTTPError:
        return "up"  # it answered: busy (503) or otherwise, it is there
    except urllib.error.URLError as exc:
        return "refused" if isinstance(exc.reason, ConnectionError) else "silent"
    except (TimeoutError, ConnectionError):
        return "refused"
    except OSError:
        return "silent"


class ApiWatch:
    """Probes the API every ``every`` seconds when asked; ``lost()`` says why it is gone, once it is."""

    def __init__(
        self,
        api_url: str,
        probe: Probe = probe_health,
        clock: Callable[[], float] = time.monotonic,
        lost_after: float = LOST_AFTER_S,
        silent_after: float = SILENT_AFTER_S,
        every: float = EVERY_S,
    ) -> None:
        self.api_url = api_url
        self._probe, self._clock = probe, clock
        self._lost_after, self._silent_after, self._every = lost_after, silent_after, every
        self._next = clock() + every
        self._down_since: dict[str, float] = {}

    def lost(self) -> str | None:
        """The reason the API is gone (``lost the Prefect API at URL: ...``), or None while it is there."""
        now = self._clock()
        if now < self._next:
            return None
        seen = self._probe(self.api_url)
        self._next = self._clock() + self._every
        if seen == "up":
            self._down_since.clear()
            return None
        since = self._down_since.setdefault(seen, now)
        bound = self._lost_after if seen == "refused" else self._silent_after
        if now - since < bound:
            return None
        how = "refused every connection" if seen == "refused" else "did not answer"
        return f"lost the Prefect API at {self.api_url}: it {how} for {now - since:.0f} s"

    def gone_now(self) -> str | None:
        """One probe now: why the API is not there (``lost the Prefect API at URL: ...``), or None."""
        seen = self._probe(self.api_url)
        if seen == "up":
            return None
        how = "refused the connection" if seen == "refused" else "did not answer"
        return f"lost the Prefect API at {self.api_url}: it {how} as the run ended"
