"""Code the tests share (as Optuna's ``optuna.testing``): imported as ``helpers.<module>`` (pytest puts
``tests/`` on the path), never a test module importing another (tests/test_suite_layout.py checks it).

* ``procs``: the one ``lwnas`` runner, processes in sessions of their own, dashboards, storage reads
* ``studies``: study files for sweeps and the session's shared swept study (``swept_study`` in conftest)
* ``registry`` / ``deploy``: the model registry, the export set, and exports run without lwnas
* ``byod_data``, ``trials``, ``front_studies``, ``figures``, ``documented``, ``netns_cluster``: as named
"""
