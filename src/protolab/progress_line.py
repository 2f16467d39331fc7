"""The progress line of `run` and `resume`: cells done / total, ETA, and the live IOPS of the cell measured."""

from __future__ import annotations

from rich.console import Console


class RichProgress:
    """Cells done / total, ETA, and the live IOPS of the cell being measured."""

    def __init__(self, console: Console):
        # imported here: only `run` draws a bar, and rich.progress costs every other command ~20 ms
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.console = console
        # 2 refreshes a second (rich's default is 10): the bar's own cost stays well under 1 % of a core
        self.bar = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("cells"),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), TextColumn("{task.fields[iops]}"),
            console=console, transient=False, refresh_per_second=2,
        )
        self.task = None

    def start(self, total, seconds_per_cell):
        self.bar.start()
        self.task = self.bar.add_task("starting", total=total, iops="")

    def cell(self, index, cell):
        self.bar.update(self.task, description=f"{cell.workload.name} · {cell.configuration.name} · "
                        f"{cell.load_point.label(cell.workload)} · r{cell.repeat}", iops="")

    def iops(self, value):
        self.bar.update(self.task, iops=f"{value:,.0f} IOPS")

    def done(self, record):
        self.bar.advance(self.task)

    def note(self, message):
        self.console.print(f"[dim]{message}[/dim]")

    def stop(self):
        self.bar.stop()
