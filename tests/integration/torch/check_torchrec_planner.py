#!/usr/bin/env python3
"""Hands a plan written by `edo export --format torchrec` to TorchRec's real sharding planner
(torchrec.distributed.planner.EmbeddingShardingPlanner) and prints what TorchRec planned as JSON,
for torchrec_real_test.py to compare with the plan. Needs the real torchrec and fbgemm-gpu-cpu
(scripts/torchrec-venv.sh); exits 77 without them.

    check_torchrec_planner.py PLAN.py TABLES.json {infer|train} WORLD_SIZE HBM_BYTES
    check_torchrec_planner.py PLAN.py TABLES.json cache WORLD_SIZE HBM_BYTES LOAD_FACTORS.json

cache (issue 34): every table of LOAD_FACTORS.json ({config name: load factor}) cached by FBGEMM's
LRU (fused_uvm_caching, table-wise) at that load factor with the plan's own statistics
(cache_statistics[name]) and workload (its constraints' features, pooling factors, batch sizes),
planned for training, whatever edo's plan chose for it: what TorchRec's estimator makes of edo's
statistics at load factors where edo measured a held-out miss rate.

TABLES.json: {config name: {"rows": N, "dim": D, "features": [...]}} (the recorded model).
Inference: the model is quantized as TorchRec's inference flow does (quantize_inference_model, with
each table's weight dtype from the plan's data_types) and planned with TorchRec's quant sharders;
training: an EmbeddingBagCollection planned with EmbeddingBagCollectionSharder(fused_params=the
plan's fused_params). Both on a topology of WORLD_SIZE "cuda" devices of HBM_BYTES each: planning
is TorchRec's arithmetic and runs on a CPU-only machine (the caching kernels exist only for
"cuda" compute devices, so a "cpu" topology would reject every offload constraint).
"""

import importlib.util
import json
import sys


def load_plan(path):
    spec = importlib.util.spec_from_file_location("edo_plan", path)
    plan = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plan)
    return plan


def model_of(tables, plan):
    """The recorded model on the meta device: one EmbeddingBagCollection `ebc` of TABLES.json's
    tables, each with the plan's data type (FP32 when it has none)."""
    import torch
    from torchrec.modules.embedding_configs import EmbeddingBagConfig
    from torchrec.modules.embedding_modules import EmbeddingBagCollection
    configs = [EmbeddingBagConfig(name=n, num_embeddings=t["rows"], embedding_dim=t["dim"], feature_names=t["features"],
                                  **({"data_type": plan.data_types[n]} if n in plan.data_types else {}))
               for n, t in tables.items()]

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ebc = EmbeddingBagCollection(tables=configs, device=torch.device("meta"))

    return Model()


def main():
    try:
        from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
        from torchrec.distributed.planner import EmbeddingShardingPlanner, Topology
        from torchrec.distributed.quant_embeddingbag import QuantEmbeddingBagCollectionSharder
        from torchrec.inference.modules import quantize_inference_model
        from torchrec.modules.embedding_configs import data_type_to_dtype
    except ImportError as e:
        print("check_torchrec_planner: skipped: no real torchrec here (%s); scripts/torchrec-venv.sh makes one" % e)
        return 77
    plan_path, tables_path, mode, world, hbm = sys.argv[1:6]
    plan = load_plan(plan_path)
    if mode == "cache":
        from fbgemm_gpu.split_table_batched_embeddings_ops_common import CacheAlgorithm
        from torchrec.distributed.planner.types import ParameterConstraints
        from torchrec.distributed.types import CacheParams
        lfs = json.load(open(sys.argv[6]))
        constraints = {}
        for name, lf in lfs.items():
            c = plan.constraints.get(name)
            constraints[name] = ParameterConstraints(
                compute_kernels=["fused_uvm_caching"], sharding_types=["table_wise"],
                feature_names=c.feature_names, pooling_factors=c.pooling_factors, num_poolings=c.num_poolings,
                batch_sizes=c.batch_sizes,
                cache_params=CacheParams(algorithm=CacheAlgorithm.LRU, load_factor=lf, stats=plan.cache_statistics[name]))
        plan.constraints, plan.data_types, plan.fused_params = constraints, {}, {}
        mode = "train"
    model = model_of(json.load(open(tables_path)), plan)
    if mode == "infer":
        model = quantize_inference_model(
            model, per_table_weight_dtype={n: data_type_to_dtype(dt) for n, dt in plan.data_types.items()})
        sharders = [QuantEmbeddingBagCollectionSharder(fused_params=dict(plan.fused_params))]
    else:
        sharders = [EmbeddingBagCollectionSharder(fused_params=dict(plan.fused_params))]
    topology = Topology(world_size=int(world), compute_device="cuda", local_world_size=int(world), hbm_cap=int(hbm))
    planner = EmbeddingShardingPlanner(topology=topology, constraints=plan.constraints)
    sharding = planner.plan(model, sharders)
    out = {"module_type": type(model.ebc).__module__ + "." + type(model.ebc).__name__, "tables": {}}
    data_type_of = {cfg.name: cfg.data_type.name for cfg in model.ebc._embedding_bag_configs}
    for module_path, params in sharding.plan.items():
        for name, p in params.items():
            cp = p.cache_params
            out["tables"][name] = {
                "module": module_path,
                "compute_kernel": p.compute_kernel,
                "sharding_type": p.sharding_type,
                "ranks": p.ranks,
                "cache_algorithm": cp.algorithm.name if cp is not None and cp.algorithm is not None else None,
                "load_factor": cp.load_factor if cp is not None else None,
                "data_type": data_type_of[name],
            }
    # What TorchRec's estimators read from each cached table's statistics, on the options the
    # planner chose: expected_miss_rate at the option's load factor and expected_lookups
    # (estimator/types.py line 729-730, torchrec 1.9.2), the prefetch time its estimator priced
    # (estimator/estimator.py: miss rate x expected_lookups rows, x dim x element size, over
    # hbm_to_ddr_mem_bw) turned back into rows, CacheParams.stable_fingerprint() (the planner's
    # persistent cache key, which calls the statistics' own), and TorchRec's
    # EmbeddingOffloadStats built from the exported histogram.
    for so in planner.get_selected_options():
        cp = so.cache_params
        if cp is None or cp.stats is None or so.cache_load_factor is None:
            continue
        st = cp.stats
        lf = so.cache_load_factor
        t = out["tables"][so.name]
        t["expected_miss_rate"] = st.expected_miss_rate(lf)
        t["expected_lookups"] = st.expected_lookups
        t["fingerprint_stable"] = cp.stable_fingerprint() == cp.stable_fingerprint() and \
            hash(cp.stable_fingerprint()) == hash(cp.stable_fingerprint())
        eos = st.embedding_offload_stats()
        t["offload_stats_miss_rate"] = eos.expected_miss_rate(lf)
        t["offload_stats_fingerprint"] = bool(eos.stable_fingerprint())
        prefetch_ms = sum(sh.perf.prefetch_compute for sh in so.shards if sh.perf is not None)
        elem = so.tensor.element_size()
        if so.compute_kernel == "fused_uvm_caching" and topology.hbm_to_ddr_mem_bw:
            t["prefetch_rows"] = prefetch_ms * topology.hbm_to_ddr_mem_bw / (so.tensor.shape[1] * elem)
    # The planner's context hash, which a plan_loader needs before it reuses a stored plan
    # (planners.py, EmbeddingShardingPlanner.plan: PlannerContextFingerprintError -> "generating a
    # fresh plan"): it fingerprints every CacheParams, stats included.
    try:
        first = planner.hash_planner_context_inputs_str()
        out["context_hash_stable"] = first == planner.hash_planner_context_inputs_str()
    except Exception as e:  # PlannerContextFingerprintError and its cause
        out["context_hash_error"] = "%s: %s (%r)" % (type(e).__name__, e, e.__cause__)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
