"""Sweeps, storage, export and the ``lwnas`` command line."""
