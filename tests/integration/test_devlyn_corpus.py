"""assay on the devlyn corpus gives devlyn's own answers (seed 04; the peer is the oracle).

``tests/devlyn`` holds a small benchmark in devlyn-cli's format, stub arms and
a stub judge, and what devlyn-cli's own harness (``run-suite.sh``,
``judge.sh``, ``compile-report.py``, ``ship-gate.py``) concluded on it with
those stubs, recorded by ``tests/devlyn/derive.py`` (see its README). Here
assay runs the same folder with the same stubs, as a devlyn user would
(``assay run FOLDER --bless``, ``rejudge``, a second night, ``--dry-run``),
and ``tests/devlyn/compare.py`` pairs every recorded conclusion with assay's:
per fixture and arm the verification vector and reasons, the pattern hits,
required and forbidden files, new dependencies, how the arm ended, the
disqualification, the score and axes; per fixture the margins and winner;
the suite's averages and counts, each gate, the known-limit warnings, the
verdict and the exit code.

Where seed 04 and devlyn's harness differ, assay follows the seed, and each
such conclusion is listed in ``SEED_04`` with the difference that explains
it: the test asserts that exactly those differ, nothing else. devlyn's
deterministic oracles (``scripts/oracle-*.py``) are devlyn's code and not in
this repository, so their findings are not compared here (their
disqualifications coincide with others in the corpus: F6 bare timed out, F7
bare deleted a required file); ``compare.py`` compares them against devlyn's
own suite, where the scripts are (README, "devlyn benchmarks").
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

import pytest

from tests.devlyn.compare import (
    CATCH_RATE,
    DEPENDENCIES,
    DISQUALIFIED_LOSES,
    STDOUT_ONLY,
    SUBSET,
    Ran,
    compare,
    report,
    run_assay,
)
from tests.integration.conftest import REPO

CORPUS = REPO / "tests" / "devlyn"
NIGHTS = ("night1", "rejudge", "night2", "dry-run", "subset", "subset-night2")
# Subsets named as devlyn's users name fixtures (short ids; devlyn's run-suite.sh takes folder names).
SUBSETS = {"subset": ("night1", ["F2", "F5"]), "subset-night2": ("night2", ["F3", "F5-upper-no-deps", "F9"])}
# The conclusions where assay follows seed 04 and devlyn's harness does not, and why.
SEED_04 = {
    **{
        (night, what): STDOUT_ONLY  # F2 bare prints its farewell on stderr
        for night in ("night1", "rejudge", "night2", "subset")
        for what in (
            "F2-goodbye-command/bare verification",
            "F2-goodbye-command/bare verification reasons",
            "F2-goodbye-command summary arms.bare.verify_score",
        )
    },
    ("night1", "F5-upper-no-deps/bare new dependencies"): DEPENDENCIES,  # npm writes package.json indented
    ("rejudge", "F5-upper-no-deps/bare new dependencies"): DEPENDENCIES,
    ("night2", "F5-upper-no-deps winner"): DISQUALIFIED_LOSES,  # the judge picks bare, which is disqualified
    ("night2", "gate: the critical-finding catch rate of variant did not fall vs shipped"): CATCH_RATE,
    ("subset", "F5-upper-no-deps/bare new dependencies"): DEPENDENCIES,
    # Gates about fixtures a subset did not run: devlyn fails the e2e fixture's and the coverage floors, and
    # compares the subset's suite margin with the whole shipped suite's; assay evaluates none of them.
    **{
        ("subset", f"gate: {gate}"): SUBSET
        for gate in (
            "every e2e fixture (F9) has variant margin >= +5",
            "at least 7 gated fixtures have variant margin >= +5 (headroom-aware)",
            "every e2e fixture (F9) has solo_claude margin over bare >= +5",
            "at least 7 headroom-available fixtures have solo_claude margin over bare >= +5",
            "the suite margin dropped no more than 3 points vs shipped",
            "the critical-finding catch rate of variant did not fall vs shipped",
        )
    },
    ("subset", "verdict"): SUBSET,  # F2 and F5 pass every gate that can answer on them
    ("subset", "exit code"): SUBSET,
    ("subset-night2", "F5-upper-no-deps winner"): DISQUALIFIED_LOSES,
    **{
        ("subset-night2", f"gate: {gate}"): SUBSET
        for gate in (
            "at least 7 gated fixtures have variant margin >= +5 (headroom-aware)",
            "at least 7 headroom-available fixtures have solo_claude margin over bare >= +5",
            "the suite margin dropped no more than 3 points vs shipped",
            "the critical-finding catch rate of variant did not fall vs shipped",
        )
    },
}


def expected(name: str) -> dict[str, object]:
    return dict(json.loads((CORPUS / "expected" / f"{name}.json").read_text()))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Ran]:
    """night1 (blessed as shipped), its re-judge, night2 against it, and a dry run."""
    return shared_runs(tmp_path_factory)


def shared_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Ran]:
    """The corpus' nights, computed once per session by whichever test worker asks first (another waits
    for it, then reads the same files); other modules read them too (the A/B page's screenshot)."""
    base = tmp_path_factory.getbasetemp()
    # Under xdist each worker has its own base below the session's; without it the base is the session's own.
    shared = (base.parent if "PYTEST_XDIST_WORKER" in os.environ else base) / "devlyn-corpus"
    shared.mkdir(exist_ok=True)
    with open(shared / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return _runs(shared)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _runs(folder: Path) -> dict[str, Ran]:
    state, done = folder / "state", folder / "exit-codes.json"
    if not done.exists():
        suite, scenario = CORPUS / "suite", CORPUS / "scenarios"
        run = ["run", str(suite), "--engine", "local", "--concurrency", "6"]
        night1 = run_assay([*run, "--bless"], scenario / "night1.json", state, folder / "night1.json", folder)
        rejudge = ["rejudge", night1.document["run_id"]]
        codes = {
            "night1": night1,
            "rejudge": run_assay(rejudge, scenario / "night1.json", state, folder / "rejudge.json", folder),
            "night2": run_assay(run, scenario / "night2.json", state, folder / "night2.json", folder),
            "dry-run": run_assay([*run, "--dry-run"], scenario / "night1.json", state, folder / "dry-run.json", folder),
        }
        for tag, (night, ids) in SUBSETS.items():  # against night1, blessed as shipped
            codes[tag] = run_assay([*run, *ids], scenario / f"{night}.json", state, folder / f"{tag}.json", folder)
        done.write_text(json.dumps({name: ran.returncode for name, ran in codes.items()}))
    found = {}
    for name, code in json.loads(done.read_text()).items():
        document = json.loads((folder / f"{name}.json").read_text())
        found[name] = Ran(code, document, state / "runs" / document["run_id"] / "results")
    return found


@pytest.mark.parametrize("night", NIGHTS)
def test_every_conclusion_agrees_but_where_seed_04_decides(runs: dict[str, Ran], night: str) -> None:
    shipped = expected("night1") if night in ("night2", "subset", "subset-night2") else None
    subset = night in SUBSETS
    conclusions = compare(
        expected(night), runs[night], oracles=False, shipped=shipped, bench=CORPUS / "suite", subset=subset
    )

    differ = {c.what: c.difference for c in conclusions if not c.agrees}
    assert differ == {what: why for (n, what), why in SEED_04.items() if n == night}, report(conclusions)
    # and where they differ, assay's answer is the one the seed's (or the issue's) rule gives
    assert all(c.explained for c in conclusions if not c.agrees), report(conclusions)
    assert len(conclusions) > (30 if night == "dry-run" else 50 if subset else 150)  # it covered the run


def test_the_seed_04_differences_are_as_documented(runs: dict[str, Ran]) -> None:
    night1, night2 = runs["night1"], runs["night2"]
    f2 = night1.file("F2-goodbye-command", "bare", "verify.json")
    assert [c["pass"] for c in f2["commands"][:2]] == [False, False]  # "Goodbye, Ada." only on stderr
    f5 = night1.file("F5-upper-no-deps", "bare", "verify.json")
    assert (
        f5["deps_added"] == 1
        and expected("night1")["fixtures"]["F5-upper-no-deps"]["arms"]["bare"]["verify"]["deps_added"] == 0
    )
    case = night2.case("F5-upper-no-deps")
    assert case["arms"]["bare"]["disqualified"] and case["winner"] == "solo_claude"  # 90 beats the variant's 88


def test_night_two_is_judged_against_the_blessed_night_one(runs: dict[str, Ran]) -> None:
    suite = runs["night2"].suite
    assert suite["baseline"] == f"shipped (run {runs['night1'].document['run_id']})"  # the blessed night1
    variant = runs["night2"].case("F3-name-guard")["arms"]["variant"]
    assert (variant["baseline_score"], variant["score"]) == (90.0, 80.0)  # devlyn: "regressed -10 vs shipped"
    assert (runs["night1"].returncode, runs["night2"].returncode) == (0, 1)


def test_no_retired_fixture_runs(runs: dict[str, Ran]) -> None:
    names = {c["name"] for c in runs["night1"].suite["cases"]}
    assert names == set(expected("night1")["fixtures"]) and "F99-hello-wave" not in names
