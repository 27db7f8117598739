"""Objectives and fronts: a study's objectives and all their math (``objectives``: storage form, sign flip to
minimisation, dominance, Pareto fronts, reference point, hypervolume), seed groups (``seeds``) and a sweep's
status (``status``).
"""
