"""The engine: the only code that speaks fio (job files, running fio, parsing its output)."""
