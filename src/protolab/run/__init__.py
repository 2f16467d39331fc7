"""Running a study: testbeds, the procedure built from [method], the session (cell loop, resume, signals)."""

from .session import Study, make_testbed  # noqa: F401
