"""Serve the matrix flow on a schedule against a Prefect server.

    prefect server start &                       # or any Prefect server
    export PREFECT_API_URL=http://127.0.0.1:4200/api
    python deployments/nightly.py examples/matrix.md --cron "0 2 * * *" --baseline shipped

The process stays up and runs the matrix on schedule (and on demand from the
UI: "Run" on the `assay-matrix/nightly` deployment). A FAIL or ERR verdict
marks the flow run failed; every run's document lands in ``--out`` as usual.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Serve the assay matrix flow on a cron schedule.")
    parser.add_argument("paths", nargs="+", help="fixture files or folders")
    parser.add_argument("--cron", default="0 2 * * *", help="cron schedule (default: 02:00 every day)")
    parser.add_argument("--name", default="nightly", help="deployment name")
    parser.add_argument("--out", default=os.path.abspath(".assay"), help="state folder (absolute by default)")
    parser.add_argument("--baseline", help="baseline run file or blessed name to gate against")
    parser.add_argument("--regression-tolerance", type=float, default=0.0, dest="tolerance")
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--label", default="nightly")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    if not os.environ.get("PREFECT_API_URL"):
        print("error: schedules need a Prefect server: start one and set PREFECT_API_URL", file=sys.stderr)
        return 2
    from fixtures_core.errors import AssayError, ValidationFailed
    from fixtures_core.runner import RunOptions, plan
    from flows.matrix import matrix_flow

    options = {
        "paths": [os.path.abspath(p) for p in args.paths],
        "out": args.out,
        "parallel": args.parallel,
        "label": args.label,
        "baseline": args.baseline,
        "tolerance": args.tolerance,
    }
    try:
        plan(RunOptions.from_mapping(options))  # a typo must fail now, not at 02:00
    except ValidationFailed as exc:
        print("\n".join(f"error: {e}" for e in exc.errors), file=sys.stderr)
        return 2
    except AssayError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    matrix_flow.serve(name=args.name, cron=args.cron, parameters={"options": options, "raise_on_failure": True})
    return 0


if __name__ == "__main__":
    sys.exit(main())
