"""Pure arithmetic over results: metric aggregates, pass@k, significance, finalize, baseline comparison."""
