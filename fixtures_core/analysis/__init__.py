"""Pure arithmetic over results: metric aggregates, pass@k, finalize, baseline comparison."""
