"""From a study to trials ready to train: the study checked against its task and the cost model (``check.py``),
each point's static costs and constraint verdicts (``costs.py``).
"""
