"""The local Prefect server's life: started per Prefect home, watched, stopped when idle; runs left behind."""
