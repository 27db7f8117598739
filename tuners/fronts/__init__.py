"""Objectives and fronts: the sign flip to minimisation, dominance, Pareto fronts, hypervolume, seed groups and a
sweep's status.
"""
