"""The plan: a validated model of a study, its built-in library, loading and expansion into cells."""
