"""Chosen configurations out of a study: YAML exports, deployable model files, confirmation at a longer budget, and
training one configuration file.
"""
