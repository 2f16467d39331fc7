"""protolab: a storage protocol lab — plan, provision, load with fio, measure, report."""

__version__ = "0.1.0"
