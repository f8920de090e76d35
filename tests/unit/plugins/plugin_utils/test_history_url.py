# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An attacker's pass over the history store's PostgreSQL URL and everything that reaches SQL (issue 34, rule 7).

- The password of a ``postgresql://`` URL is never in a message, a display name or a file name: not when the server
  refuses the connection, not when libpq cannot parse the URL (its messages quote the text they choke on), not for
  a URL ``urllib`` cannot split.
- A URL of another scheme (``POSTGRESQL://`` is PostgreSQL: schemes are case-insensitive; ``postgresql+psycopg://``,
  ``mysql://``, ``sqlite://``) or a libpq ``key=value`` string is refused, never taken for a SQLite file path (before:
  a SQLite file was created in directories named after the user and password, and the message showed them).
- Every value from a record, a run or the caller reaches SQL as a bound parameter: injection text round-trips.

The connections go to 127.0.0.1 port 1 (refused at once); the injection test uses a real SQLite store (the
PostgreSQL backend binds the same statements: tests/integration/test_history_postgres.py).
"""

from __future__ import annotations

import os

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import history

pytest.importorskip("psycopg", reason="psycopg 3 (requirements.txt) is not installed")

SECRET = "s3cretPW"
RUN = {"run_id": "r1", "started": "2026-11-22T10:00:00Z", "ended": "2026-11-22T10:05:00Z"}


@pytest.fixture(autouse=True)
def _cwd(tmp_path, monkeypatch):
    """Relative paths land in the test's own directory, which must stay empty."""
    monkeypatch.chdir(tmp_path)


def _error_of(call):
    with pytest.raises(history.HistoryError) as caught:
        call()
    return str(caught.value)


@pytest.mark.parametrize("url", [
    "postgresql://u:%s@127.0.0.1:1/db" % SECRET,                      # refused by the server
    "postgresql://u:%s@127.0.0.1:badport/db" % SECRET,                # libpq: invalid port
    "postgresql://u:%s%%zz@127.0.0.1:1/db" % SECRET,                 # libpq quotes the bad percent-encoding
    "postgresql://u@127.0.0.1:1/db?password=%s" % SECRET,             # the password as a parameter
    "postgresql://u:%s@127.0.0.1:1/db?sslmode=bogus" % SECRET,
    "postgres://:%s@127.0.0.1:1/db" % SECRET,
    "postgresql://u:%s@[::1/db" % SECRET,                             # urllib cannot split it
    "POSTGRESQL://u:%s@127.0.0.1:1/db" % SECRET,                      # a scheme is case-insensitive
])
def test_the_password_is_never_shown(url, tmp_path):
    assert SECRET not in history.display_name(url)
    for call in (lambda: history.runs(url), lambda: history.record_run(url, RUN, []),
                 lambda: history.save_baseline(url, "b", "r1")):
        message = _error_of(call)
        assert SECRET not in message and "cannot" in message, message
    assert os.listdir(str(tmp_path)) == []


def test_an_uppercase_scheme_is_postgresql_not_a_file(tmp_path):
    url = "POSTGRESQL://u:%s@127.0.0.1:1/db" % SECRET
    assert history.is_url(url)
    assert "Connection refused" in _error_of(lambda: history.record_run(url, RUN, []))
    assert os.listdir(str(tmp_path)) == []


@pytest.mark.parametrize("db", [
    "postgresql+psycopg://u:%s@127.0.0.1:1/db" % SECRET, "mysql://u:%s@h/db" % SECRET,
    "sqlite://u:%s@h/x.db" % SECRET, "http://u:%s@h/" % SECRET,
    "host=127.0.0.1 port=1 user=u password=%s dbname=db" % SECRET,
])
def test_another_scheme_or_a_key_value_string_is_refused_not_a_sqlite_file(db, tmp_path):
    for call in (lambda: history.runs(db), lambda: history.record_run(db, RUN, []), lambda: history.store_version(db)):
        message = _error_of(call)
        assert SECRET not in message and "not supported" in message, message
    assert SECRET not in history.display_name(db)
    assert os.listdir(str(tmp_path)) == []


def test_the_callbacks_early_check_refuses_another_scheme_without_its_text(tmp_path):
    from ansible_collections.aifabric.acceptance.plugins.plugin_utils import publish
    with pytest.raises(history.HistoryError) as caught:
        publish.check_destinations(str(tmp_path / "reports"), "mysql://u:%s@h/db" % SECRET)
    assert SECRET not in str(caught.value) and "mysql://" in str(caught.value)
    publish.check_destinations(str(tmp_path / "reports"), "postgresql://u:%s@h/db" % SECRET)   # not opened here


INJECTIONS = ("x'); DROP TABLE runs; --", "' OR '1'='1", "%s", "%(x)s", "?", "\\'; DELETE FROM results; --",
              "a\"b", "$1", "x\x00y")


def test_injection_text_in_records_runs_and_names_is_stored_as_data(tmp_path):
    assert_injection_is_data(str(tmp_path / "history.sqlite"))


def assert_injection_is_data(db):
    """Runs, records, baseline names and run ids of injection text stored in ``db`` and read back as they were
    (tests/integration/test_history_postgres.py calls it on a real PostgreSQL server)."""
    records = [results.make("rdma.ib_write_bw", "pass", reason=text, host=text, peer=text + "p", target=text,
                            metrics={"bw_avg_gbit_s": 1.0}) for text in INJECTIONS]
    records += [results.make("gpu.gemm_bf16", "pass", host=text, target=text, metrics={"tflops": 700.0})
                for text in INJECTIONS]
    for index, text in enumerate(INJECTIONS):
        history.record_run(db, dict(RUN, run_id="%s-%d" % (text, index)), records)
    stored = [history.NUL_SUBSTITUTE.join(t.split("\x00")) for t in INJECTIONS]      # NUL: U+FFFD in both backends
    assert sorted(r[0] for r in history.runs(db)) == sorted("%s-%d" % (t, i) for i, t in enumerate(stored))
    meta, rows = history.run_records(db, "%s-0" % INJECTIONS[0])
    pairs = [r for r in rows if r["peer"]]
    assert sorted((r["host"], r["reason"], r["peer"]) for r in pairs) == sorted((t, t, t + "p") for t in stored)
    assert meta["run_id"] == "%s-0" % INJECTIONS[0]
    for text in INJECTIONS[:3]:
        history.save_baseline(db, text, "%s-1" % INJECTIONS[1])
        assert history.load_baseline(db, text) is not None
    assert history.prune(db, keep_runs=2) and len(history.runs(db)) == 2
    with pytest.raises(history.HistoryError, match="is not in the history store"):
        history.run_records(db, "' OR '1'='1")
