"""When a Prefect API counts as lost: refused for 10 s straight, or silent for 60 s; any answer resets."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from fixtures_core.execution.daemons import free_port
from flows.server.api_watch import ApiWatch, probe_flow_run, probe_health


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


def test_a_server_that_takes_the_connection_and_does_not_answer_is_silent_not_refused() -> None:
    """A busy server (or one still starting, its port already open): it gets the minute, not 10 s."""
    import socket

    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(8)  # connections wait in its backlog; nothing accepts or answers them
        api = f"http://127.0.0.1:{listening.getsockname()[1]}/api"
        assert probe_health(api) == "silent"
        assert probe_flow_run(api, "abc") == "silent"


def test_once_it_follows_a_flow_run_a_server_that_does_not_know_it_is_lost_at_once() -> None:
    now = [0.0]
    watch = watch_of(iter(["up", "refused", "unknown"]), now)
    now[0] = 2.0
    assert watch.lost() is None
    watch.follow("abc", probe=lambda _url: "refused")  # the probe given is the test's
    watch.follow("ignored")  # the first flow run stays the one followed
    now[0] = 4.0
    assert watch.lost() is None  # refused for 0 s
    watch._probe = lambda _url: "unknown"
    now[0] = 6.0
    assert watch.lost() == (
        "lost the Prefect API at http://api: the server answering there does not know this run's flow run abc "
        "(another server took its place)"
    )


ANSWERS = [(200, "up"), (503, "up"), (404, "unknown"), (401, "unknown"), (403, "unknown")]


@pytest.mark.parametrize(("code", "seen"), ANSWERS)
def test_a_probe_of_the_flow_run_reads_the_servers_answer(code: int, seen: str) -> None:
    """A real HTTP server answering ``code`` for the flow run (and 200 for its health)."""
    heard: list[str | None] = []

    class Answer(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            heard.append(self.headers.get("Authorization"))
            self.send_response(200 if self.path.endswith("/health") else code)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    http = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    try:
        api = f"http://127.0.0.1:{http.server_address[1]}/api"
        assert probe_health(api) == "up"
        assert probe_flow_run(api, "abc", {"Authorization": "Basic c2VjcmV0"}) == seen
        watch = ApiWatch(api, every=0.0, headers={"Authorization": "Basic c2VjcmV0"})
        watch.follow("abc")
        assert (watch.gone_now() is None) is (seen == "up")
    finally:
        http.shutdown()
    assert heard == [None, "Basic c2VjcmV0", "Basic c2VjcmV0"]  # the health probe goes without credentials
