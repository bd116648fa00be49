"""What people read: reports rendered from finished runs (they never decide a status)."""
