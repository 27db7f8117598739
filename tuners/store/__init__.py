"""The trial store: where sweeps keep their trials (an Optuna study in SQL storage), the trial record, outcomes,
and the fast SQL reads and writes.
"""
