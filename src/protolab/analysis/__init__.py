"""Pure analysis: statistics over repeats, steady state, the wire model and its ceilings. No I/O here."""
