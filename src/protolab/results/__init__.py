"""The run directory and the typed records stored in it."""
