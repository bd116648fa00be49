"""Whether the Prefect API a run talks to is still there.

When the server goes away mid-run, Prefect's client retries every call with
backing off (about a minute per call), so a run would hang for minutes and
then end without a report. ``ApiWatch`` probes the API's health while the run
runs: a server that refuses connections for ``lost_after`` seconds straight is
gone (a stopped or crashed server refuses at once), and one that does not
answer at all for ``silent_after`` seconds is lost too (a busy SQLite server
answers slowly, so that wait is long). Any HTTP answer, 503 included, means
the server is there.

Once the run's flow run exists (``follow``), the watch asks for it instead: a
server that answers but does not know it (404), or no longer takes the run's
credentials (401, 403), is not the server the run's flow run lives on (another
one took the port: another Prefect home, another database). That is final at
once: nothing the run sends there can land in its record.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping

LOST_AFTER_S = 10.0
SILENT_AFTER_S = 60.0
EVERY_S = 2.0
PROBE_TIMEOUT_S = 2.0

Probe = Callable[[str], str]  # "up", "refused", "silent" (or, for a flow run, "unknown")
FOREIGN = (401, 403, 404)  # the answers of a server that is not the flow run's: unknown to it, or not ours


def probe_health(api_url: str) -> str:
    """``up`` when the API answers anything, ``refused`` when nothing listens, ``silent`` on no answer."""
    return _probe(f"{api_url.rstrip('/')}/health", {}, ())


def probe_flow_run(api_url: str, flow_run_id: str, headers: Mapping[str, str] | None = None) -> str:
    """As ``probe_health``, asking for the flow run with the run's own ``headers`` (its credentials);
    ``unknown`` when the API answers that it does not know it (404) or does not take them (401, 403)."""
    return _probe(f"{api_url.rstrip('/')}/flow_runs/{flow_run_id}", headers or {}, FOREIGN)


def _probe(url: str, headers: Mapping[str, str], foreign: tuple[int, ...]) -> str:
    request = urllib.request.Request(url, headers=dict(headers))  # noqa: S310 - the run's own API, http(s)
    try:
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_S):  # noqa: S310
            return "up"
    except urllib.error.HTTPError as exc:
        return "unknown" if exc.code in foreign else "up"  # else it answered: busy (503) or otherwise, it is there
    except urllib.error.URLError as exc:
        return "refused" if isinstance(exc.reason, ConnectionError) else "silent"
    except ConnectionError:  # reset or refused once connected
        return "refused"
    except TimeoutError:  # connected, no answer in time: busy (or still starting), not gone
        return "silent"
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
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.api_url = api_url
        self._probe, self._clock = probe, clock
        self._lost_after, self._silent_after, self._every = lost_after, silent_after, every
        self._headers = dict(headers or {})  # what the run's client sends (its credentials), for its flow run
        self._next = clock() + every
        self._down_since: dict[str, float] = {}
        self.flow_run_id: str | None = None

    def follow(self, flow_run_id: str, probe: Probe | None = None) -> None:
        """From now on, ask for the run's flow run: a server that does not know it is not the run's."""
        if self.flow_run_id is not None:
            return
        self.flow_run_id = flow_run_id
        self._probe = probe or (lambda url: probe_flow_run(url, flow_run_id, self._headers))

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
        if seen == "unknown":
            return self._replaced()
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
        if seen == "unknown":
            return self._replaced()
        how = "refused the connection" if seen == "refused" else "did not answer"
        return f"lost the Prefect API at {self.api_url}: it {how} as the run ended"

    def _replaced(self) -> str:
        return (
            f"lost the Prefect API at {self.api_url}: the server answering there does not know this run's "
            f"flow run {self.flow_run_id} (another server took its place)"
        )
