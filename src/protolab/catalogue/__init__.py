"""The catalogue of a results root: every run directory indexed in an embedded SQLite database, rebuilt from the run
directories (the truth) whenever it is missing, stale or damaged; `protolab history` and `protolab check` read it."""
