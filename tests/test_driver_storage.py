"""The sweep driver's storage skips the per-commit disk flush; every other reader and writer keeps it.

``open_storage(url, flush_each_commit=False)`` (what ``lwnas sweep`` opens) must turn off PostgreSQL's
``synchronous_commit`` and put a SQLite file in WAL mode at ``synchronous=NORMAL``, on every connection
its pool opens; the default must leave the server's and SQLite's durable settings alone. What the
driver commits must be there for a reader with its own connection.
"""

from __future__ import annotations

import optuna
import pytest
from helpers.procs import PG_URL, postgres_or_skip
from sqlalchemy import text

from tuners.store.connection import open_storage

optuna.logging.set_verbosity(optuna.logging.WARNING)


def flush_setting(storage) -> str:
    """SQLite's ``synchronous`` (2 FULL, 1 NORMAL) or PostgreSQL's ``synchronous_commit``, as a string."""
    with storage.engine.connect() as conn:
        if storage.engine.dialect.name == "sqlite":
            return str(conn.execute(text("PRAGMA synchronous")).scalar())
        return conn.execute(text("SHOW synchronous_commit")).scalar()


def test_only_the_driver_skips_the_flush_and_its_commits_are_read(storage_url):
    url = storage_url  # every backend (tests/conftest.py)
    name = f"driver-storage-{id(url)}"
    driver = open_storage(url, create=True, flush_each_commit=False)
    reader = open_storage(url)
    try:
        assert flush_setting(driver) in ("1", "off")  # NORMAL (WAL) / synchronous_commit off
        assert flush_setting(reader) in ("2", "on")  # the defaults: FULL / on
        # every pooled connection gets it, not only the first: hold two at once
        with driver.engine.connect() as a, driver.engine.connect() as b:
            for conn in (a, b):
                statement = "PRAGMA synchronous" if url.startswith("sqlite") else "SHOW synchronous_commit"
                assert str(conn.execute(text(statement)).scalar()) in ("1", "off")
        if url.startswith("sqlite"):
            with driver.engine.connect() as conn:
                assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"

        study = optuna.create_study(study_name=name, storage=driver, directions=["maximize", "minimize"])
        trial = study.ask()
        trial.set_user_attr("plan", {"config": {"d_model": 16}})
        study.tell(trial, [0.5, 100.0])
        seen = optuna.load_study(study_name=name, storage=reader).trials
        assert [(t.values, t.user_attrs) for t in seen] == [([0.5, 100.0], {"plan": {"config": {"d_model": 16}}})]
    finally:
        optuna.delete_study(study_name=name, storage=reader)
        driver.engine.dispose()
        reader.engine.dispose()


@pytest.mark.postgres
def test_the_driver_keeps_the_options_of_the_users_url():
    # a search_path in the URL: the driver and every reader must see the same schema, hence the same studies
    postgres_or_skip()
    schema = "lwnas_url_options"
    plain = open_storage(PG_URL)
    with plain.engine.connect() as conn:
        conn.execute(text(f"CREATE SCHEMA IF NOT EXISTS {schema}"))
        conn.commit()
    plain.engine.dispose()
    url = f"{PG_URL}{'&' if '?' in PG_URL else '?'}options=-csearch_path%3D{schema}"
    driver = open_storage(url, create=True, flush_each_commit=False)
    reader = open_storage(url)
    try:
        for storage, flush in ((driver, "off"), (reader, "on")):
            with storage.engine.connect() as conn:
                assert conn.execute(text("SHOW search_path")).scalar() == schema
                assert conn.execute(text("SHOW synchronous_commit")).scalar() == flush
        optuna.create_study(study_name="in-schema", storage=driver)
        assert [s.study_name for s in optuna.get_all_study_summaries(reader)] == ["in-schema"]
    finally:
        driver.engine.dispose()
        reader.engine.dispose()
        with plain.engine.connect() as conn:
            conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
            conn.commit()
        plain.engine.dispose()
