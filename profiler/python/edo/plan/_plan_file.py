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


# ---- the one validator ------------------------------------------------------------------
# Mirrors edo::tuner::plan_from_json's per-table part and check_choice (tuner/src/io/plan_import.cpp):
# the strategy is one of edo's (kernels::strategy_names() plus "shared" and "unchanged"), each
# params key is one the tuner writes for that strategy, with its type, and every table-level value
# has the type the C++ reader wants. Keys that are only displayed (why, step_us) may be missing
# here (a plan written by hand as a dict), but when present their type is checked. Change the
# two together.
STRATEGIES = ("fp32", "fp16", "bf16", "fp8", "int8", "int4", "pq", "multihash", "qr", "lowrank",
              "pruned", "offload", "mch", "ssd")   # kernels::strategy_names() (kernels/core/strategy.cpp), "mch"
# (managed collision, tuner/src/candidates/mch_candidates.h: its spec is the row format of its N rows) and
# "ssd" (the SSD tier, tuner/src/candidates/ssd_candidates.h: its spec is the row format of its rows)
_ROW_FORMATS = ("fp32", "fp16", "bf16", "fp8", "int8", "int4")
_COMMON_PARAMS = {"same_weights_as": "s", "apart_from": "n", "shared_by": "n"}
# The training levers on a row format (tuner/src/candidates/llm_candidates.h): a sparse gradient, freezing.
_LEVER_PARAMS = {"gradient": "s", "gradient_rows_per_step": "c", "gradient_rows_basis": "s", "dense_gradient_bytes": "c",
                 "sparse_gradient_bytes": "c", "optimizer_from": "s", "saved_gradient_bytes": "c",
                 "saved_optimizer_bytes": "c", "head": "s", "saved_bytes": "c", "saved_weight_bytes": "c",
                 # trim_vocab (tuner/src/candidates/trim_candidates.h)
                 "vocab_coverage": "s", "kept_rows": "c", "unk_old_id": "c", "held_out_lookups": "c",
                 "held_out_lost_lookups": "c", "saved_table_bytes": "c", "remap_bytes": "c", "head_kind": "s", "saved_head_bytes": "c",
                 "saved_logit_bytes_per_step": "c"}
_PARAMS = {  # strategy -> params key -> 'c' count, 's' text, 'n' table names, 'f' number >= 0, 'o' object of those
    "shared": {"with": "s", "format": "s"},
    "unchanged": {},
    "fp8": dict(_COMMON_PARAMS, scale="s"),
    "offload": dict(_COMMON_PARAMS, cache_rows="c", policy="s", heldout="o", hit_rate_estimated="s", knee_rows="c",
                    cache_policy="s", policy_replays="o", policy_headroom="f", policy_replays_missing="s"),
    "pruned": dict(_COMMON_PARAMS, kept_rows="c", held_out_lost_fraction="f", held_out_lookups="c"),
    "lowrank": dict(_COMMON_PARAMS, rank="c", activation_bytes="c"),
    "pq": dict(_COMMON_PARAMS, m="c", k="c", iters="c", sample="c"),
    "multihash": dict(_COMMON_PARAMS, buckets="c", k="c"),
    "qr": dict(_COMMON_PARAMS, m="c"),
    "mch": dict(_COMMON_PARAMS, slots="c", policy="s", eviction_interval="c", decay_exponent="f", hit_rate="f",
                insert_rate="f", collision_rate="f", eviction_rate="f", own_row_rate="f", module_bytes="c",
                heldout="o", steps_approximated="s"),
    "ssd": dict(_COMMON_PARAMS, device_cache_rows="c", host_cache_rows="c", device_hit_rate="f", host_hit_rate="f",
                ssd_reads_per_step="f", host_fetches_per_step="f", row_bytes="c", ssd_read_us="f", ssd_queue_depth="c",
                host_link_gbs="f", storage="s", cache_policy="s", heldout="o"),
}


def printable(text, limit=60):
    """A name in a message: printable ASCII, at most ``limit`` characters (a message is one line)."""
    out = "".join(c if " " <= c < "\x7f" else "?" for c in str(text)[:limit])
    return out + ("..." if len(str(text)) > limit else "")


def _is_count(v, limit=2 ** 63):
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return 0 <= v < limit
    return isinstance(v, float) and math.isfinite(v) and 0 <= v <= 2.0 ** 53 and v == int(v)


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _finite_nonneg(v):
    return _is_number(v) and math.isfinite(v) and v >= 0


def _fail(where, what):
    raise PlanError("not a valid edo plan: %s: %s" % (where, what))


def _opt_text(t, key, where):
    v = t.get(key)
    if v is not None and not isinstance(v, str):
        _fail(where, '"%s" is not text' % key)
    return v or ""


def _opt_bool(t, key, where):
    v = t.get(key)
    if key in t and not isinstance(v, bool):
        _fail(where, '"%s" is not true or false' % key)
    return v


def _check_spec(spec, strategy, where):
    # kernels::StrategySpec::parse: NAME[:key=value]...
    parts = spec.split(":")
    if parts[0] not in STRATEGIES or any("=" not in p or p.startswith("=") for p in parts[1:]):
        _fail(where, 'spec "%s" is not an edo strategy spec' % printable(spec))
    if strategy in ("mch", "ssd"):
        if parts[0] not in _ROW_FORMATS:
            _fail(where, 'spec "%s" is not a row format (an %s choice keeps its rows in one)' % (printable(spec), strategy))
    elif parts[0] != strategy:
        _fail(where, 'spec "%s" is not a %s spec' % (printable(spec), strategy))


def _check_params(strategy, params, rows, where):
    allowed = _PARAMS.get(strategy)
    if allowed is None:
        if strategy not in _ROW_FORMATS:
            _fail(where, 'strategy "%s" has no documented params' % printable(strategy))
        allowed = dict(_COMMON_PARAMS, **_LEVER_PARAMS)
    for key, v in params.items():
        kind = allowed.get(key)
        if kind is None:
            _fail(where, 'params key "%s" is not one a %s choice has' % (printable(key), strategy))
        if kind == "c" and not _is_count(v, 2 ** 53 + 1):
            _fail(where, 'params "%s" is not a finite whole number >= 0 (at most 2^53)' % key)
        if kind == "s" and not isinstance(v, str):
            _fail(where, 'params "%s" is not text' % key)
        if kind == "n" and not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
            _fail(where, 'params "%s" is not a list of table names' % key)
        if kind == "f" and not _finite_nonneg(v):
            _fail(where, 'params "%s" is not a finite number >= 0' % key)
        if kind == "o":
            if not isinstance(v, dict):
                _fail(where, 'params "%s" is not an object' % key)
            for fk, fv in v.items():
                if not _finite_nonneg(fv):
                    _fail(where, 'params "%s" key "%s" is not a finite number >= 0' % (key, printable(fk)))
    if strategy == "offload":
        if "cache_rows" not in params:
            _fail(where, 'an offload choice\'s params have no "cache_rows"')
        if params.get("cache_policy", "lru") not in ("lru", "lfu"):
            _fail(where, 'params "cache_policy" is not "lru" or "lfu" (FBGEMM\'s cache algorithms)')
        policy = params.get("policy", "lru")
        if policy not in ("lru", "static"):
            _fail(where, 'params "policy" is "%s", not lru or static' % printable(policy))
        if rows and params["cache_rows"] > rows:
            _fail(where, 'params "cache_rows" is larger than the table\'s %d rows' % rows)
    if strategy == "fp8" and params.get("scale", "row") != "row":
        _fail(where, 'params "scale" is not "row"')
    if strategy == "shared":
        if not isinstance(params.get("with"), str):
            _fail(where, 'a shared table\'s params have no "with" table')


def _check_issue29_keys(t, where):
    grad = _opt_text(t, "gradient", where)
    if grad not in ("", "sparse", "dense", "none"):
        _fail(where, '"gradient" is "%s", not sparse or dense (or none: frozen)' % printable(grad))
    _opt_bool(t, "validated", where)
    _opt_text(t, "dense_use", where)
    _opt_text(t, "strategy_label", where)
    tp = t.get("train_precision")
    if tp is None:
        return
    if not isinstance(tp, dict) or not all(isinstance(v, str) for v in tp.values()):
        _fail(where, '"train_precision" is not an object of text values')


def check_table(t, i, names=None):
    """Raises PlanError (one line naming the table) when table entry ``t`` (the i-th) is not what
    edo's plan reader accepts. ``names``: the names seen so far (a set), for duplicates."""
    where = "table %d" % i
    if not isinstance(t, dict):
        raise PlanError("not a valid edo plan: %s is not an object" % where)
    name = t.get("name")
    if not isinstance(name, str):
        raise PlanError("not a valid edo plan: %s has no name" % where)
    where = 'table "%s"' % printable(name)
    if names is not None:
        if name in names:
            raise PlanError("not a valid edo plan: %s is listed twice" % where)
        names.add(name)
    strategy = t.get("strategy")
    if not isinstance(strategy, str):
        raise PlanError("not a valid edo plan: %s has no strategy" % where)
    if strategy not in STRATEGIES and strategy not in ("shared", "unchanged"):
        _fail(where, 'strategy "%s" is not one of edo\'s (%s, shared, unchanged)'
              % (printable(strategy), ", ".join(STRATEGIES)))
    params = t.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        _fail(where, "params is not an object")
    for key in ("rows", "dim", "recorded_device_bytes", "measured_rows"):
        if key in t and not _is_count(t[key]):
            _fail(where, '"%s" is not a whole number >= 0' % key)
    if isinstance(t.get("dim"), int) and t["dim"] > 1 << 24:
        _fail(where, "dim %d is too large" % t["dim"])
    for key in ("device_bytes", "host_bytes"):
        if not _is_count(t.get(key)):
            _fail(where, "%s is not a byte count" % key)
    for key in ("dtype", "recorded_optimizer", "why", "spec", "optimizer"):
        _opt_text(t, key, where)
    for key in ("training", "tuned", "needs_retraining"):
        _opt_bool(t, key, where)
    for key in ("step_us", "lookups_per_step"):
        v = t.get(key)
        if v is not None and not _finite_nonneg(v):
            _fail(where, '"%s" is not a number >= 0 or null' % key)
    err = t.get("error")
    if err is not None and not (_is_number(err) and (math.isnan(err) or err >= 0)):
        _fail(where, "error is not a number >= 0 or null")
    for key in ("hit_rate", "recorded_hit_rate", "heldout_hit_rate", "policy_headroom"):
        v = t.get(key)
        if v is not None and not (_is_number(v) and 0 <= v <= 1):
            _fail(where, '"%s" is not a rate in [0, 1] or null' % key)
    cache_policy = t.get("cache_policy")
    if cache_policy is not None:
        if cache_policy not in ("lru", "lfu"):
            _fail(where, '"cache_policy" is not "lru" or "lfu" (FBGEMM\'s cache algorithms); write one of them or null')
        if strategy != "offload":
            _fail(where, '"cache_policy" is set on a table that is not offloaded; set it to null')
    spec = t.get("spec") or ""
    if spec and strategy not in ("shared", "unchanged"):
        _check_spec(spec, strategy, where)
    opt = t.get("optimizer") or ""
    if opt not in ("", "rowwise_adagrad", "sparse_adam", "sparse_adagrad", "frozen", "tie_head", "trim_vocab"):
        _fail(where, 'optimizer "%s" is not "rowwise_adagrad", "sparse_adam", "sparse_adagrad", "frozen", "tie_head", '
              '"trim_vocab" '
              'or empty'
              % printable(opt))
    rows = t.get("rows") if _is_count(t.get("rows")) else 0
    _check_params(strategy, params, rows, where)
    if strategy == "shared" and params.get("with") == name:
        _fail(where, "is shared with itself")
    _check_issue29_keys(t, where)


def check_tables(tables):
    """Validates a whole plan's tables (check_table on each, then the ties); raises PlanError."""
    names = set()
    for i, t in enumerate(tables):
        check_table(t, i, names)
    for t in tables:
        if t.get("strategy") == "shared" and (t.get("params") or {}).get("with") not in names:
            raise PlanError('not a valid edo plan: table "%s" is shared with "%s", which the plan does not list'
                            % (printable(t["name"]), printable((t.get("params") or {}).get("with"))))


def _from_document(doc, path):
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise PlanError("%s: not an %s document (write one with 'edo export FILE --format json')"
                        % (path, SCHEMA))
    tables = doc.get("tables")
    if not isinstance(tables, list):
        raise PlanError("%s: not a valid edo plan: \"tables\" is not a list" % path)
    try:
        check_tables(tables)
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
        tables = _from_edodb(path)
        try:
            check_tables(tables)
        except PlanError as e:
            raise PlanError("%s: %s" % (path, e))
        return tables
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
