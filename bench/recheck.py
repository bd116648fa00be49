"""Recheck (issue 46): checking stored samples again against running them, local engine.

    python bench/recheck.py [--samples 2000,10000] [--out bench/results/recheck.json]

For each count N: a matrix of 100 rows x N/100 samples of ``true`` (CEL
``exitCode == 0``) is run fresh (``assay run --engine local``), then the
same run is rechecked (``assay recheck RUN --engine local``): no command
starts. Each is a child process, timed (wall) and measured (peak RSS of the
process, ``root_hwm_mb``). Memory is flat when the recheck of the largest
count peaks within 1.5x of the smallest's.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

ROWS = 100
FLAT_BOUND = 1.5


def fixture(folder: Path, repeat: int) -> Path:
    path = folder / "recheck.md"
    lines = [f"---\nrepeat: {repeat}\n---\n", "| Name | Command | CEL |", "|---|---|---|"]
    lines += [f"| row {i:03d} | true | `exitCode == 0` |" for i in range(ROWS)]
    path.write_text("\n".join(lines) + "\n")
    return path


def one_count(samples: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="assay-bench-recheck-") as tmp:
        folder = Path(tmp)
        path = fixture(folder, max(samples // ROWS, 1))
        state = str(folder / "state")
        env = c.child_env(prefect_home=folder / "prefect")
        run = c.measure(
            [c.python(), "-m", "flows.run", str(path), "--engine", "local", "--out", state, "--progress", "off"],
            env=env, cwd=Path(__file__).resolve().parents[1], timeout=1800,
        )  # fmt: skip
        run_id = sorted(p.name for p in (folder / "state" / "runs").iterdir())[0]
        recheck = c.measure(
            [c.python(), "-m", "flows.run", "recheck", run_id, "--engine", "local", "--out", state],
            env=env, cwd=Path(__file__).resolve().parents[1], timeout=1800,
        )  # fmt: skip
    return {
        "samples": samples,
        "run_s": round(run.wall_s, 2),
        "run_exit": run.returncode,
        "run_peak_mb": round(run.root_hwm_mb, 1),
        "recheck_s": round(recheck.wall_s, 2),
        "recheck_exit": recheck.returncode,
        "recheck_peak_mb": round(recheck.root_hwm_mb, 1),
    }


def report(document: dict[str, object]) -> None:
    rows = document["counts"]
    assert isinstance(rows, list)
    print(
        c.table(
            ["samples", "fresh run s", "recheck s", "run peak MB", "recheck peak MB", "exits"],
            [
                [
                    r["samples"],
                    r["run_s"],
                    r["recheck_s"],
                    r["run_peak_mb"],
                    r["recheck_peak_mb"],
                    f"{r['run_exit']}/{r['recheck_exit']}",
                ]
                for r in rows
            ],  # fmt: skip
        )
    )
    print(f"\nrecheck memory flat (largest within {FLAT_BOUND}x of smallest): {document['flat']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", default="2000,10000", help="sample counts, comma-separated")
    parser.add_argument("--out", default="bench/results/recheck.json")
    args = parser.parse_args()
    counts = [one_count(int(n)) for n in args.samples.split(",")]
    peaks = [float(r["recheck_peak_mb"]) for r in counts]  # type: ignore[arg-type]
    document: dict[str, object] = {
        "machine": c.machine(),
        "counts": counts,
        "flat": peaks[-1] <= FLAT_BOUND * peaks[0],
        "leftover_processes": c.leftovers(),
    }
    return c.close(args.out, document, report)


if __name__ == "__main__":
    c.run_script(main)
