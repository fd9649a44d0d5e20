"""The results store: one SQLite file (Python's standard library) that every finished point is
written to at once, keyed by :mod:`model.sweep.plan`'s point key.

Why SQLite rather than DuckDB or Parquet: it needs nothing beyond Python, one file holds the
results of any number of sweeps, and it takes **several writers at once** -- two sweeps (on
two terminals, or two cluster jobs on a shared file system that honours POSIX locks) writing
the same store queue on its lock for the few milliseconds of a commit, in write-ahead-log
mode, and never corrupt it. DuckDB allows one writing process per file, and Parquet files
cannot be appended to, so either would need one file per writer and a merge step; a sweep's
results (thousands of rows of a few dozen numbers) are far below where a columnar engine pays.
Pandas, DuckDB or the ``sqlite3`` shell read the file directly, and ``gpusched sweep report
--csv`` exports it.

Tables::

    results (key PRIMARY KEY, command, config, policy, seed, quick, code, metrics JSON,
             seconds, worker, run, finished)       -- one row per computed point, ever
    configs (hash PRIMARY KEY, command, base, document JSON, inputs JSON)
    sweeps  (id, name UNIQUE, file, command, definition JSON, created, updated)
    members (sweep, number, key, axes JSON, policy, seed)   -- a sweep's points, in order
    failures (key, sweep, run, error, attempts, at)         -- points that raised or died

A row is inserted once (``INSERT OR IGNORE``): whichever of two sweeps finishes a point first
stores it, and a key present is never computed again. Each finished point is its own
transaction (a coupled model's group: one transaction for the group), so an interrupted sweep
loses at most the points that were running. ``synchronous = NORMAL`` in WAL mode: a power cut
may lose the last commits, never the file.
"""

from __future__ import annotations

import datetime
import json
import sqlite3
from pathlib import Path

from model.sweep.plan import Plan, Point
from model.sweep.spec import SweepError

__all__ = ["Store"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    key TEXT PRIMARY KEY, command TEXT NOT NULL, config TEXT NOT NULL, policy TEXT NOT NULL,
    seed INTEGER NOT NULL, quick INTEGER NOT NULL, code TEXT NOT NULL, metrics TEXT NOT NULL,
    seconds REAL, worker TEXT, run TEXT, finished TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS configs (
    hash TEXT PRIMARY KEY, command TEXT NOT NULL, base TEXT NOT NULL, document TEXT NOT NULL,
    inputs TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sweeps (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, file TEXT, command TEXT NOT NULL,
    definition TEXT NOT NULL, created TEXT NOT NULL, updated TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS members (
    sweep INTEGER NOT NULL, number INTEGER NOT NULL, key TEXT NOT NULL, axes TEXT NOT NULL,
    policy TEXT NOT NULL, seed INTEGER NOT NULL, PRIMARY KEY (sweep, number));
CREATE INDEX IF NOT EXISTS members_key ON members (key);
CREATE TABLE IF NOT EXISTS failures (
    key TEXT NOT NULL, sweep INTEGER, run TEXT, error TEXT NOT NULL, attempts INTEGER,
    at TEXT NOT NULL);
"""

#: Seconds a writer waits for another's commit before giving up (a commit takes milliseconds;
#: this covers a slow network file system).
BUSY_TIMEOUT = 120


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


class Store:
    """A results store at ``path`` (created with its folder when missing).

    With ``create=False`` a missing file is a :class:`SweepError` (``sweep report`` of a
    store that does not exist), and so is a file that is not a store.
    """

    def __init__(self, path, *, create: bool = True):
        self.path = Path(path)
        if not create and not self.path.is_file():
            raise SweepError(f"{self.path}: no such results store (a sweep creates it)")
        if not create:
            # SQLite takes an empty or short file for an empty database and would write the
            # schema over it: a report reads only what is a database already.
            with self.path.open("rb") as file:
                if file.read(16) != b"SQLite format 3\0":
                    raise SweepError(f"{self.path}: not a results store (not an SQLite file; "
                                     f"'sweep report' reads the --store a sweep wrote)")
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT, isolation_level=None)
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as error:
            raise SweepError(f"{self.path}: not a results store ({error})") from None

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _transaction(self):
        return _Transaction(self._db)

    # -- a sweep and its points ----------------------------------------------------------------

    def register(self, plan: Plan, definition: dict) -> int:
        """Record the sweep (by name; a sweep run again with a changed file replaces its
        definition and point list) and its points' configs; return its id."""
        sweep = plan.sweep
        now = _now()
        with self._transaction() as db:
            db.execute("INSERT INTO sweeps (name, file, command, definition, created, updated) "
                       "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET "
                       "file = excluded.file, command = excluded.command, "
                       "definition = excluded.definition, updated = excluded.updated",
                       (sweep.name, str(sweep.file), sweep.command, json.dumps(definition),
                        now, now))
            (sweep_id,) = db.execute("SELECT id FROM sweeps WHERE name = ?",
                                     (sweep.name,)).fetchone()
            db.execute("DELETE FROM members WHERE sweep = ?", (sweep_id,))
            db.executemany("INSERT INTO members VALUES (?, ?, ?, ?, ?, ?)",
                           [(sweep_id, point.index, point.key, json.dumps(list(point.axes)),
                             point.policy, point.seed) for point in plan.points])
            db.executemany("INSERT OR IGNORE INTO configs VALUES (?, ?, ?, ?, ?)",
                           [(digest, sweep.command, str(sweep.base),
                             json.dumps(document, default=str),
                             json.dumps(plan.inputs.get(digest, {})))
                            for digest, document in plan.documents.items()])
        return sweep_id

    def done(self, keys) -> set[str]:
        """The keys among ``keys`` that have results."""
        keys = list(keys)
        found = set()
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            rows = self._db.execute(
                f"SELECT key FROM results WHERE key IN ({', '.join('?' * len(chunk))})", chunk)
            found.update(key for (key,) in rows)
        return found

    def add(self, points: list[Point], plan: Plan, outcome: dict, run: str) -> int:
        """Store the results of one task (``outcome`` from :func:`run_task`), all its points
        in one transaction; return how many rows were new (a point another sweep stored
        meanwhile is kept as it was)."""
        sweep = plan.sweep
        now = _now()
        seconds = outcome["seconds"] / max(1, len(points))
        with self._transaction() as db:
            before = db.total_changes
            db.executemany(
                "INSERT OR IGNORE INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(point.key, sweep.command, point.config, point.policy, point.seed,
                  int(sweep.quick), plan.code, json.dumps(outcome["results"][point.policy]),
                  seconds, outcome["worker"], run, now) for point in points])
            return db.total_changes - before

    def fail(self, points: list[Point], sweep_id: int, run: str, error: str,
             attempts: int) -> None:
        """Record that a task's points failed (they stay missing; a later run tries again)."""
        with self._transaction() as db:
            db.executemany("INSERT INTO failures VALUES (?, ?, ?, ?, ?, ?)",
                           [(point.key, sweep_id, run, error, attempts, _now())
                            for point in points])

    # -- reading -------------------------------------------------------------------------------

    def sweeps(self) -> list[dict]:
        """Every sweep in the store: ``id``, ``name``, ``file``, ``command``, ``definition``."""
        return [{"id": row[0], "name": row[1], "file": row[2], "command": row[3],
                 "definition": json.loads(row[4]), "updated": row[5]}
                for row in self._db.execute(
                    "SELECT id, name, file, command, definition, updated FROM sweeps "
                    "ORDER BY id")]

    def members(self, sweep_id: int) -> list[dict]:
        """A sweep's points in order, each with its ``metrics`` (None when not computed)."""
        rows = self._db.execute(
            "SELECT m.number, m.key, m.axes, m.policy, m.seed, r.metrics, r.seconds, r.run "
            "FROM members m LEFT JOIN results r ON r.key = m.key WHERE m.sweep = ? "
            "ORDER BY m.number", (sweep_id,))
        return [{"number": number, "key": key, "axes": json.loads(axes), "policy": policy,
                 "seed": seed, "metrics": None if metrics is None else json.loads(metrics),
                 "seconds": seconds, "run": run}
                for number, key, axes, policy, seed, metrics, seconds, run in rows]

    def failures(self, sweep_id: int, run: str | None = None) -> list[dict]:
        query = "SELECT key, error, attempts FROM failures WHERE sweep = ?"
        arguments: tuple = (sweep_id,)
        if run is not None:
            query += " AND run = ?"
            arguments += (run,)
        return [{"key": key, "error": error, "attempts": attempts}
                for key, error, attempts in self._db.execute(query, arguments)]

    def count(self) -> int:
        (count,) = self._db.execute("SELECT COUNT(*) FROM results").fetchone()
        return count


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on an error): the write lock is taken
    at the start, so two writers queue instead of failing half-way."""

    def __init__(self, db: sqlite3.Connection):
        self._db = db

    def __enter__(self) -> sqlite3.Connection:
        self._db.execute("BEGIN IMMEDIATE")
        return self._db

    def __exit__(self, kind, error, trace) -> None:
        self._db.execute("ROLLBACK" if kind is not None else "COMMIT")
