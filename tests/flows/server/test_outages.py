"""Outages as a serving process says them: one line when the API is lost, one when it answers again, however
many polls fail in between; and what counts as an outage when Prefect's runner stops."""

from __future__ import annotations

import threading

import httpx

from deployments.nightly import _is_outage
from flows.server.outages import OutageLog
from tests.polling import wait_until


class Scripted:
    """A probe that answers from a script, then keeps giving its last answer."""

    def __init__(self, answers: list[str]) -> None:
        self.answers, self.lock = answers, threading.Lock()

    def __call__(self, url: str) -> str:
        with self.lock:
            return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def test_an_outage_is_said_once_when_lost_and_once_when_back() -> None:
    said: list[str] = []
    probe = Scripted(["up", *["refused"] * 200, "up"])
    with OutageLog("http://api", said.append, probe=probe, every=0.001, lost_after=0.05) as outages:
        wait_until(lambda: outages.lost, "the outage was noticed", 10)
        wait_until(lambda: not outages.lost, "the API came back", 10)
        assert outages.wait_up(timeout=1)
    assert len(said) == 2, said  # not a line per poll: some 200 failed probes in between
    assert said[0].startswith("lost the Prefect API at http://api: it refused every connection for ")
    assert said[0].endswith("; serving waits for it (the schedule is kept on the server)")
    assert said[1].startswith("the Prefect API at http://api answers again (lost for ")


def test_a_failure_the_caller_saw_counts_only_when_a_probe_fails_too() -> None:
    said: list[str] = []
    probe = Scripted(["up"])
    with OutageLog("http://api", said.append, probe=probe, every=60) as outages:
        outages.lost_now("All connection attempts failed")
        assert not outages.lost and said == []  # it answers: a blip, nothing to say
        probe.answers = ["refused"]
        outages.lost_now("All connection attempts failed")
        assert outages.lost
    assert said == [
        "lost the Prefect API at http://api: All connection attempts failed; serving waits for it "
        "(the schedule is kept on the server)"
    ]


def test_what_counts_as_an_outage_when_prefects_runner_stops() -> None:
    request = httpx.Request("GET", "http://api/flow_runs")
    gave_up = ExceptionGroup("loops", [RuntimeError("Service exceeded error threshold.")])
    unavailable = httpx.HTTPStatusError("503", request=request, response=httpx.Response(503, request=request))
    forbidden = httpx.HTTPStatusError("401", request=request, response=httpx.Response(401, request=request))
    try:
        raise ValueError("pausing failed") from httpx.ConnectError("All connection attempts failed")
    except ValueError as exc:
        chained = exc
    assert _is_outage(gave_up) and _is_outage(unavailable) and _is_outage(chained)
    assert not _is_outage(forbidden) and not _is_outage(ValueError("a bug"))
