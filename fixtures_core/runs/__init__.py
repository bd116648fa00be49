"""What every engine shares: planning a run, recording its evidence, closing it (A/B judging
included); re-judging a stored run; the local engine.

An engine (the local thread pool, or the Prefect flow) only decides where ``rows.run_row``
executes; planning, evidence and the run document are here.
"""
