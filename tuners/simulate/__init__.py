"""Tabular benchmarks of the knob space and what replays them: the table format (``table``) and the exporter
that writes a table from a finished grid sweep (``table_export``)."""

from tuners.simulate.table import FORMAT, Entry, Run, Table, TableError, load_table, save_table

__all__ = ["FORMAT", "Entry", "Run", "Table", "TableError", "load_table", "save_table"]
