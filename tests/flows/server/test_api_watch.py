"""When a Prefect API counts as lost: refused for 10 s straight, or silent for 60 s; any answer resets."""

from __future__ import annotations

from collections.abc import Iterator

from fixtures_core.execution.daemons import free_port
from flows.server.api_watch import ApiWatch, probe_health


def watch_of(seen: Iterator[str], now: list[float]) -> ApiWatch:
    return ApiWatch("http://api", probe=lambda _url: next(seen), clock=lambda: now[0], every=2.0)


def test_refused_for_ten_seconds_straight_is_lost_and_an_answer_in_between_starts_over() -> None:
    now = [0.0]
    watch = watch_of(iter(["refused", "up", "refused", "refused", "refused"]), now)
    verdicts = []
    for t in (2.0, 4.0, 6.0, 12.0, 16.0):
        now[0] = t
        verdicts.append(watch.lost())
    # refused at 2 (0 s), up at 4 (reset), refused at 6, 12 (6 s), 16 (10 s): lost
    assert verdicts[:4] == [None, None, None, None]
    assert verdicts[4] == "lost the Prefect API at http://api: it refused every connection for 10 s"


def test_a_silent_server_gets_a_minute_and_probes_are_spaced() -> None:
    now = [0.0]
    watch = watch_of(iter(["silent", "silent", "silent"]), now)
    now[0] = 1.0
    assert watch.lost() is None  # before the first probe is due: no probe (the iterator is not used)
    for t, expected in ((2.0, None), (40.0, None)):
        now[0] = t
        assert watch.lost() is expected
    now[0] = 62.0
    assert watch.lost() == "lost the Prefect API at http://api: it did not answer for 60 s"


def test_nothing_listening_is_refused() -> None:
    assert probe_health(f"http://127.0.0.1:{free_port()}/api") == "refused"
