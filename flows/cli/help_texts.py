"""Help texts of the options more than one command has."""

from __future__ import annotations

HTML_HELP = "Write a self-contained HTML report (plots, drill-down) here."
JUNIT_HELP = "Write JUnit XML here (a testcase per row) for CI test tabs."
SUMMARY_HELP = "Write the Markdown summary here (also appended to $GITHUB_STEP_SUMMARY when set)."
FRAME_HELP = "Write the sample x metric frame here (.csv, or .parquet with pyarrow)."
JUDGE_HELP = "A judge command line replacing the A/B suites' own."
BUNDLE_HELP = "Write the HTML page as DIR/index.html with the evidence it links to copied beside it (a CI artifact)."
SAVED_RUN = "a run file, run folder, run id, blessed name or latest"  # what Store.resolve_run takes
RUN_HELP = f"{SAVED_RUN.capitalize()}."
PATH_HELP = (
    "Fixture files or folders of them; after a devlyn benchmark, fixture ids (F2, F2-goodbye-command) run only "
    "those (a retired one too)."
)
