"""Reading an edo plan in pure Python: a JSON or YAML ``edo.plan/1`` file (``edo export``,
``edo tune --json``) or the latest plan stored in an ``.edodb`` (``edo tune FILE``), through the
standard library's sqlite3. The result is a list of table dicts with the keys of the plan
JSON's ``tables`` entries (docs/tuning.md) that apply_plan needs.

A plan is data from outside: anything that is not the documented shape raises PlanError with
one line naming the problem.
"""

import json
import math
import os
import sqlite3

SCHEMA = "edo.plan/1"
_SQLITE_HEAD = b"SQLite format 3\x00"


class PlanError(ValueError):
    """A plan that cannot be read or is not an edo.plan/1 document."""


def _is_count(v):
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return 0 <= v < 2 ** 63
    return isinstance(v, float) and math.isfinite(v) and 0 <= v <= 2.0 ** 53 and v == int(v)


def _check_table(t, i):
    where = "table %d" % i
    if not isinstance(t, dict):
        raise PlanError("not a valid edo plan: %s is not an object" % where)
    name = t.get("name")
    if not isinstance(name, str):
        raise PlanError("not a valid edo plan: %s has no name" % where)
    where = "table %r" % name[:60]
    if not isinstance(t.get("strategy"), str):
        raise PlanError("not a valid edo plan: %s has no strategy" % where)
    if not isinstance(t.get("params", {}), dict):
        raise PlanError("not a valid edo plan: %s: params is not an object" % where)
    for key in ("device_bytes", "host_bytes"):
        if not _is_count(t.get(key)):
            raise PlanError("not a valid edo plan: %s: %s is not a byte count" % (where, key))
    err = t.get("error")
    if err is not None and not (isinstance(err, (int, float)) and not isinstance(err, bool)
                                and (math.isnan(err) or err >= 0)):
        raise PlanError("not a valid edo plan: %s: error is not a number >= 0 or null" % where)


def _from_document(doc, path):
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise PlanError("%s: not an %s document (write one with 'edo export FILE --format json')"
                        % (path, SCHEMA))
    tables = doc.get("tables")
    if not isinstance(tables, list):
        raise PlanError("%s: not a valid edo plan: \"tables\" is not a list" % path)
    for i, t in enumerate(tables):
        try:
            _check_table(t, i)
        except PlanError as e:
            raise PlanError("%s: %s" % (path, e))
    return tables


def _from_edodb(path):
    # Read-only, never creating a file: a path that is not a database stays untouched.
    try:
        db = sqlite3.connect("file:%s?mode=ro" % path.replace("?", "%3f").replace("#", "%23"), uri=True)
    except sqlite3.Error as e:
        raise PlanError("%s: cannot open (%s)" % (path, e))
    try:
        try:
            row = db.execute("SELECT id, run_id FROM tune_plans ORDER BY id DESC LIMIT 1").fetchone()
        except sqlite3.Error:
            row = None
        if row is None:
            raise PlanError("%s: no plan in this recording; run 'edo tune %s --budget SIZE' first"
                            % (path, path))
        plan_id, run_id = row
        shapes = {}
        try:
            rows_of = db.execute("SELECT name, rows, dim, dtype, optimizer, training FROM tune_tables WHERE run_id = ?",
                                 (run_id,)).fetchall()
        except sqlite3.OperationalError:  # schema before 13: a table trains when its optimizer state was recorded
            rows_of = [r + (r[4] != "",) for r in db.execute(
                "SELECT name, rows, dim, dtype, optimizer FROM tune_tables WHERE run_id = ?", (run_id,))]
        for name, rows, dim, dtype, opt, trains in rows_of:
            shapes[name] = dict(rows=rows, dim=dim, dtype=dtype, recorded_optimizer=opt, training=bool(trains))
        out = []
        for table, cand, shares, dev, host, why in db.execute(
                "SELECT table_name, candidate_id, shares_with, device_bytes, host_bytes, why "
                "FROM tune_choices WHERE plan_id = ? ORDER BY rowid", (plan_id,)):
            t = dict(name=table, device_bytes=dev, host_bytes=host, why=why, strategy="unchanged",
                     params={}, error=0.0, optimizer="", needs_retraining=False, spec="")
            t.update(shapes.get(table, {}))
            c = None
            if cand is not None:
                c = db.execute("SELECT table_name, strategy, spec, params, optimizer, error, "
                               "needs_retraining FROM tune_candidates WHERE id = ?", (cand,)).fetchone()
            if c is not None:
                owner, strategy, spec, params, opt, error, retrain = c
                try:
                    params = json.loads(params) if params else {}
                except ValueError:
                    raise PlanError("%s: candidate %d has params that are not JSON" % (path, cand))
                t.update(strategy=strategy, spec=spec, params=params if isinstance(params, dict) else {},
                         optimizer=opt, error=error if error is not None else float("nan"),
                         needs_retraining=bool(retrain))
                if shares:
                    t.update(strategy="shared", params={"with": shares, "format": spec}, shares_with=shares)
                elif owner != table:
                    t["params"] = {"same_weights_as": owner}
            out.append(t)
        return out
    finally:
        db.close()


def load_plan(plan):
    """The tables of a plan: ``plan`` is a path (JSON, YAML or .edodb), an edo.plan/1 dict,
    or a list of table dicts already loaded."""
    if isinstance(plan, dict):
        return _from_document(plan, "the plan")
    if isinstance(plan, list):
        return _from_document({"schema": SCHEMA, "tables": plan}, "the plan")
    path = os.fspath(plan)
    try:
        with open(path, "rb") as f:  # read once: the path may be a pipe
            text = f.read((256 << 20) + 1)
    except OSError as e:
        raise PlanError("%s: cannot read (%s); give a plan file or an .edodb that 'edo tune' wrote to"
                        % (path, e.strerror or e))
    if text[:16] == _SQLITE_HEAD:
        return _from_edodb(path)
    if len(text) > 256 << 20:
        raise PlanError("%s: larger than 256 MiB; not a plan" % path)
    try:
        text = text.decode("utf-8")
    except UnicodeDecodeError:
        raise PlanError("%s: not UTF-8 text; not a plan" % path)
    if text.lstrip().startswith("{"):
        try:
            doc = json.loads(text)
        except ValueError as e:
            raise PlanError("%s: not valid JSON (%s)" % (path, str(e).splitlines()[0]))
    else:
        try:
            import yaml
        except ImportError:
            raise PlanError("%s: a YAML plan needs PyYAML (pip install pyyaml), or export the plan "
                            "as JSON: edo export FILE --format json" % path)
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise PlanError("%s: not valid YAML (%s)" % (path, " ".join(str(e).split())))
    return _from_document(doc, path)
