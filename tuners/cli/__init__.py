"""The ``lwnas`` command line: one module per command or command group (``main.py`` holds the app)."""
