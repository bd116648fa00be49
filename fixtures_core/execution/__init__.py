"""Run rows: one sample's process under a deadline, its checks, and a row's k samples."""
