"""Loads a plan written by `edo export --format torchrec` the way a user would (importing it
as a module), with TorchRec's classes faked when TorchRec is not installed, and prints what it
built as JSON (stdout) for the test to compare with the plan: argv[1] the plan file, argv[2]
the folder of the fakes."""
import ast
import importlib.util
import json
import sys

# Every identifier and call the generated file may contain: anything else means recorded text
# became code.
ALLOWED_NAMES = {"CacheAlgorithm", "EmbeddingComputeKernel", "ParameterConstraints", "CacheParams", "DataType",
                 "EDO_PLAN", "constraints", "data_types", "edo_only", "shared_with", "True", "False", "None",
                 "EmbOptimType", "edo_only_why", "module_paths", "fused_params", "fbgemm_offload_device_bytes"}
ALLOWED_ATTRS = {"value", "LRU", "LFU", "FUSED", "FUSED_UVM_CACHING", "QUANT", "QUANT_UVM_CACHING", "FP32", "FP16",
                 "BF16", "INT8", "INT4", "EXACT_ROWWISE_ADAGRAD"}
ALLOWED_CALLS = {"ParameterConstraints", "CacheParams"}


def audit(path):
    tree = ast.parse(open(path, encoding="utf-8").read())
    bad = []
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

out = {"audit": audit(sys.argv[1]), "real_torchrec": real, "edo_plan": plan.EDO_PLAN, "constraints": {}, "data_types": {},
       "edo_only": plan.edo_only, "shared_with": plan.shared_with, "edo_only_why": plan.edo_only_why,
       "module_paths": plan.module_paths, "fbgemm_offload_device_bytes": plan.fbgemm_offload_device_bytes,
       "fused_params": {k: getattr(v, "name", v) for k, v in plan.fused_params.items()}}
for name, c in plan.constraints.items():
    cp = getattr(c, "cache_params", None)
    out["constraints"][name] = {
        "compute_kernels": list(c.compute_kernels),
        "algorithm": cp.algorithm.name if cp is not None else None,
        "load_factor": cp.load_factor if cp is not None else None,
        "stochastic_rounding": getattr(c, "stochastic_rounding", None),
    }
for name, dt in plan.data_types.items():
    out["data_types"][name] = dt.name
print(json.dumps(out))
