"""Loads a plan written by `edo export --format torchrec` the way a user would (importing it
as a module), with TorchRec's classes faked when TorchRec is not installed, and prints what it
built as JSON (stdout) for the test to compare with the plan: argv[1] the plan file, argv[2]
the folder of the fakes; argv[3] (optional) JSON {name: [load factors]}: each table's
cache_statistics expected_miss_rate at those load factors, as "probe"."""
import ast
import importlib.util
import json
import sys

# Every identifier and call the generated file may contain: anything else means recorded text
# became code.
ALLOWED_NAMES = {"CacheStatistics", "EdoCacheStatistics", "CacheAlgorithm", "EmbeddingComputeKernel", "ParameterConstraints", "CacheParams", "DataType",
                 "EDO_PLAN", "constraints", "data_types", "edo_only", "shared_with", "True", "False", "None",
                 "EmbOptimType", "edo_only_why", "module_paths", "fused_params", "fbgemm_offload_device_bytes",
                 "cache_statistics", "num_embeddings_post_pruning", "edo_placement", "rowwise_adagrad_tables",
                 "fused_params_reaches", "managed_collision", "KeyValueParams", "key_value_tables"}
ALLOWED_ATTRS = {"value", "LRU", "LFU", "FUSED", "FUSED_UVM_CACHING", "QUANT", "QUANT_UVM_CACHING", "FP32", "FP16",
                 "BF16", "INT8", "INT4", "EXACT_ROWWISE_ADAGRAD", "KEY_VALUE"}
ALLOWED_CALLS = {"ParameterConstraints", "CacheParams", "EdoCacheStatistics", "KeyValueParams"}


def fixed_class(node):
    """The one class the file defines (EdoCacheStatistics, fixed text): no string in it but its
    docstring, so no recorded text can be inside it."""
    if not (isinstance(node, ast.ClassDef) and node.name == "EdoCacheStatistics"):
        return False
    doc = node.body[0].value if node.body and isinstance(node.body[0], ast.Expr) else None
    return not any(isinstance(n, ast.Constant) and isinstance(n.value, str) and n is not doc for n in ast.walk(node))


def audit(path):
    tree = ast.parse(open(path, encoding="utf-8").read())
    bad = []
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    if len(classes) != 1 or not fixed_class(classes[0]):
        bad.append("classes " + ", ".join(c.name for c in classes))
    tree.body = [n for n in tree.body if not fixed_class(n)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in ALLOWED_NAMES:
            bad.append("name " + node.id)
        elif isinstance(node, ast.Attribute) and node.attr not in ALLOWED_ATTRS:
            bad.append("attribute " + node.attr)
        elif isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in ALLOWED_CALLS):
            bad.append("call " + ast.dump(node.func))
        elif isinstance(node, (ast.ImportFrom,)) and not (node.module.startswith("torchrec") or node.module.startswith("fbgemm_gpu")):
            bad.append("import " + node.module)
        elif isinstance(node, (ast.Import, ast.FunctionDef, ast.Lambda, ast.ClassDef, ast.With, ast.For, ast.While)):
            bad.append(type(node).__name__)
    return bad


try:
    import torchrec  # noqa: F401
    real = True
except ImportError:
    sys.path.insert(0, sys.argv[2])
    real = False

spec = importlib.util.spec_from_file_location("edo_plan", sys.argv[1])
plan = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plan)



def fingerprints(st):
    """stable_fingerprint() of the statistics, of a second object built from the same values, and of
    one whose curve differs by 0.01 at every point (the planner's persistent cache key must
    change with the statistics: torchrec/distributed/types.py, CacheStatistics.stable_fingerprint)."""
    if not hasattr(st, "_miss_curve"):
        return None, None
    args = (st.expected_lookups, st._miss_curve, st.cacheability, st.height, st.heldout, st.distinct_lookups)
    same = type(st)(*args).stable_fingerprint()
    changed = type(st)(st.expected_lookups, [(x, min(1.0, y + 0.01)) for x, y in st._miss_curve], *args[2:]).stable_fingerprint()
    fp = st.stable_fingerprint()
    hash(fp)  # a cache key: hashable, no object identity
    return fp == same == st.stable_fingerprint(), fp != changed


def stats_dict(st, load_factor=None):
    from torchrec.distributed.types import CacheStatistics
    stable, changes = fingerprints(st)
    out = {"is_cache_statistics": isinstance(st, CacheStatistics), "expected_lookups": st.expected_lookups,
           "cacheability": st.cacheability, "distinct_lookups": getattr(st, "distinct_lookups", None),
           "height": getattr(st, "height", None), "heldout": getattr(st, "heldout", None),
           "fingerprint_stable": stable, "fingerprint_changes": changes,
           "miss_rate": {str(clf): st.expected_miss_rate(clf) for clf in (0.0, 0.01, 0.1, 0.5, 1.0)}}
    if load_factor:
        out["at_load_factor"] = st.expected_miss_rate(load_factor)
    if hasattr(st, "mrc_hist_counts"):
        out["mrc_hist_counts_10"] = st.mrc_hist_counts(10)
    return out


def kv_dict(kv):
    """The KeyValueParams fields the export sets (None: the constraint has none)."""
    from torchrec.distributed.types import KeyValueParams
    if kv is None:
        return None
    return {"is_key_value_params": isinstance(kv, KeyValueParams), "max_l1_cache_size": kv.max_l1_cache_size,
            "l2_cache_size": kv.l2_cache_size, "ssd_storage_directory": kv.ssd_storage_directory}


out = {"audit": audit(sys.argv[1]), "real_torchrec": real, "edo_plan": plan.EDO_PLAN, "constraints": {}, "data_types": {},
       "edo_only": plan.edo_only, "shared_with": plan.shared_with, "edo_only_why": plan.edo_only_why,
       "module_paths": plan.module_paths, "fbgemm_offload_device_bytes": plan.fbgemm_offload_device_bytes,
       "fused_params": {k: getattr(v, "name", v) for k, v in plan.fused_params.items()},
       "num_embeddings_post_pruning": getattr(plan, "num_embeddings_post_pruning", {}),
       "edo_placement": getattr(plan, "edo_placement", {}),
       "rowwise_adagrad_tables": getattr(plan, "rowwise_adagrad_tables", None),
       "fused_params_reaches": getattr(plan, "fused_params_reaches", None),
       "key_value_tables": getattr(plan, "key_value_tables", {})}
# Every pruned count goes where TorchRec reads it: an EmbeddingBagConfig built with it.
from torchrec.modules.embedding_configs import EmbeddingBagConfig  # noqa: E402
for name, n in out["num_embeddings_post_pruning"].items():
    cfg = EmbeddingBagConfig(num_embeddings=n, embedding_dim=1, name=name, data_type=plan.data_types[name],
                             num_embeddings_post_pruning=n)
    assert isinstance(n, int) and cfg.num_embeddings_post_pruning == n, name
for name, c in plan.constraints.items():
    cp = getattr(c, "cache_params", None)
    out["constraints"][name] = {
        "compute_kernels": list(c.compute_kernels or []),
        "algorithm": cp.algorithm.name if cp is not None and cp.algorithm is not None else None,
        "load_factor": cp.load_factor if cp is not None else None,
        "stochastic_rounding": getattr(c, "stochastic_rounding", None),
        "feature_names": c.feature_names,
        "pooling_factors": c.pooling_factors,
        "num_poolings": c.num_poolings,
        "batch_sizes": c.batch_sizes,
        "sharding_types": c.sharding_types,
        "min_partition": c.min_partition,
        "key_value_params": kv_dict(c.key_value_params),
    }
    st = getattr(cp, "stats", None) if cp is not None else None
    if st is not None:
        out["constraints"][name]["stats"] = stats_dict(st, cp.load_factor)
out["cache_statistics"] = {n: stats_dict(st) for n, st in getattr(plan, "cache_statistics", {}).items()}
if len(sys.argv) > 3:
    for n, lfs in json.loads(sys.argv[3]).items():
        st = getattr(plan, "cache_statistics", {}).get(n)
        if st is not None and n in out["cache_statistics"]:
            out["cache_statistics"][n]["probe"] = [[lf, st.expected_miss_rate(lf)] for lf in lfs]
for name, dt in plan.data_types.items():
    out["data_types"][name] = dt.name
print(json.dumps(out))
