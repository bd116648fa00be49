"""A flow run's job variables against its deployment's: what Prefect's worker would merge, named in one line."""

from __future__ import annotations

import pytest

from flows.flow.job_variables import JobVariablesChanged, check_unchanged

DEPLOYMENT = {"assay_allowed_roots": "/srv/state", "env": {"TEAM": "a"}}


@pytest.mark.parametrize(
    "flow_run",
    [{}, {"assay_allowed_roots": "/srv/state"}, {"env": {"TEAM": "a"}}, {"env": {}}, dict(DEPLOYMENT)],
    ids=["none", "the-same-roots", "the-same-env", "an-empty-env", "all-the-same"],
)
def test_the_deployments_own_job_variables_pass(flow_run: dict[str, object]) -> None:
    """What the UI's form shows (the deployment's own values), or nothing: the worker's merge changes nothing."""
    check_unchanged(DEPLOYMENT, flow_run)


@pytest.mark.parametrize(
    ("flow_run", "named"),
    [
        ({"assay_allowed_roots": "/"}, "assay_allowed_roots '/'"),
        ({"env": {"TEAM": "a", "BASH_ENV": "/tmp/x"}}, "env.BASH_ENV '/tmp/x'"),  # merged key by key: one is new
        ({"env": {"TEAM": "b"}}, "env.TEAM 'b'"),
        ({"env.LD_PRELOAD": "/tmp/x.so"}, "env.LD_PRELOAD '/tmp/x.so'"),  # the worker reads a dotted name as env
        ({"working_dir": "/"}, "working_dir '/'"),
        ({"command": None, "stream_output": False}, "stream_output False"),  # None is what the deployment has
    ],
)
def test_a_changed_job_variable_is_named_in_one_line(flow_run: dict[str, object], named: str) -> None:
    with pytest.raises(JobVariablesChanged) as refused:
        check_unchanged(DEPLOYMENT, flow_run)
    assert str(refused.value).startswith(f"refused: job_variables.{named}: a custom run may not change its deployment")


def test_a_long_or_multiline_name_is_escaped_and_cut() -> None:
    with pytest.raises(JobVariablesChanged) as refused:
        check_unchanged({}, {"env": {"A\nB" + "C" * 300_000: "x"}})
    message = str(refused.value)
    assert message.startswith("refused: job_variables.env.A\\nBCCC") and "\n" not in message
    assert len(message) < 400, "a refusal names the variable, never echoes it"
