"""``python -m flows.run PATH...``: ``assay run PATH...`` (the command line lives in ``flows.cli``)."""

from __future__ import annotations

from flows.cli.start_up import hold

if __name__ == "__main__":  # first: an interrupt during the slow imports below exits 2, with one line
    hold()

from flows.cli.streams import fill_closed  # noqa: E402

if __name__ == "__main__":
    fill_closed()

from flows.cli.main import leave, main, module_main  # noqa: E402, F401  (main: for scripts that import flows.run)

if __name__ == "__main__":
    leave(module_main(last=True))
