"""The command line: ``assay`` and ``python -m flows.run``, a thin ``main(argv) -> int`` over fixtures_core/runs."""
