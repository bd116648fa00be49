"""The Prefect flow: a run's rows as subflows or tasks, their states, names, events, logs and artifacts."""
