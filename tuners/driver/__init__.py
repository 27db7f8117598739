"""The sweep driver: Ray Tune runs the trials, the searcher asks Optuna for points, schedulers stop unpromising
trials, one live driver per study (leases), progress on the terminal.
"""
