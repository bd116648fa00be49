"""Orchestration of assay runs, in three rooms: ``flow`` (the Prefect flow), ``server`` (the local
Prefect server's life) and ``cli`` (the command line); ``run`` is ``python -m flows.run``."""
