"""Plugin tasks for the sweep tests (loaded as ``tests.plugins.MODULE:Class``)."""
