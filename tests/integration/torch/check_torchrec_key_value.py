#!/usr/bin/env python3
"""Hands the SSD-tier tables of a plan written by `edo export --format torchrec` (its
key_value_tables: KEY_VALUE constraints with KeyValueParams) to the real TorchRec and prints what
TorchRec made of them as JSON, for torchrec_key_value_test.py to compare with the plan. Needs the
real torchrec and fbgemm-gpu-cpu; exits 77 without them.

    check_torchrec_key_value.py PLAN.py TABLES.json

TABLES.json: {config name: {"rows": N, "dim": D, "features": [...]}} (the recorded model).
An inference table on the SSD tier (in_constraints False: no constraint, TorchRec's quant
sharders have no key-value kernel) is given the KEY_VALUE constraint its key_value_tables entry
describes, as for serving it unquantized through EmbeddingBagCollectionSharder. Four things, all
TorchRec's own code (torchrec 1.9.2), none needing a GPU:
  cuda:    EmbeddingEnumerator on a "cuda" topology (SSD capacity: TorchRec's default 2 TB) with
           the plan's constraints: the kernels and KeyValueParams of every option, and each table's
           storage estimate, and again with max_l1_cache_size 0 (the difference is what the
           estimator charges the device for the L1); EmbeddingShardingPlanner.plan: the kernel
           and KeyValueParams it chose.
  runtime: what a sharded model would build from those choices: the fused params
           (add_params_from_parameter_sharding), the TBE groups (group_tables) and each SSD TBE's
           parameters (_populate_ssd_tbe_params: cache_sets, l2_cache_size) and optimizer.
  cpu:     the same enumerator on a "cpu" topology, and the training sharder's kernels for
           "cpu" and "cuda" (BaseEmbeddingSharder.compute_kernels), the quant sharder's for "cuda".
  no_ssd:  the enumerator on a "cuda" topology without SSD capacity.
"""

import copy
import json
import sys

from check_torchrec_planner import load_plan, model_of


def enumerate_options(plan, tables, topology, constraints):
    """{table: [options]} from TorchRec's enumerator, or the error it raised."""
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    from torchrec.distributed.planner.enumerators import EmbeddingEnumerator
    enumerator = EmbeddingEnumerator(topology=topology, batch_size=512, constraints=constraints)
    try:
        options = enumerator.enumerate(model_of(tables, plan), [EmbeddingBagCollectionSharder(fused_params=dict(plan.fused_params))])
    except Exception as e:  # noqa: BLE001: what TorchRec raised is the answer
        return {"error": "%s: %s" % (type(e).__name__, e)}
    out = {}
    for o in options:
        kv = o.key_value_params
        st = o.shards[0].storage
        out.setdefault(o.name, []).append({
            "compute_kernel": o.compute_kernel, "sharding_type": o.sharding_type,
            "max_l1_cache_size": kv.max_l1_cache_size if kv else None, "l2_cache_size": kv.l2_cache_size if kv else None,
            "hbm": st.hbm, "ddr": st.ddr, "ssd": st.ssd})
    return out


def runtime_tbes(plan, tables, sharding):
    """The SSD TBEs a sharded model would build from the planner's choices (one rank)."""
    from torchrec.distributed.batched_embedding_kernel import _populate_ssd_tbe_params
    from torchrec.distributed.embedding_sharding import group_tables
    from torchrec.distributed.embedding_types import EmbeddingComputeKernel, ShardedEmbeddingTable
    from torchrec.distributed.utils import add_params_from_parameter_sharding
    from torchrec.modules.embedding_configs import DataType, PoolingType
    sharded = []
    for params in sharding.plan.values():
        for name, ps in params.items():
            if ps.compute_kernel != EmbeddingComputeKernel.KEY_VALUE.value:
                continue
            t = tables[name]
            sharded.append(ShardedEmbeddingTable(
                num_embeddings=t["rows"], embedding_dim=t["dim"], name=name, feature_names=t["features"],
                data_type=plan.data_types.get(name, DataType.FP32), pooling=PoolingType.SUM,
                compute_kernel=EmbeddingComputeKernel.KEY_VALUE, local_rows=t["rows"], local_cols=t["dim"],
                fused_params=add_params_from_parameter_sharding(dict(plan.fused_params), ps)))
    out = []
    for group in group_tables([sharded])[0]:
        p = _populate_ssd_tbe_params(group)
        # The optimizer the TBE is built with (KeyValueEmbeddingBag passes fused_params on to
        # SSDTableBatchedEmbeddingBags, which asserts it is one it trains with).
        optimizer = (group.fused_params or {}).get("optimizer")
        out.append({"tables": [t.name for t in group.embedding_tables], "cache_sets": p["cache_sets"],
                    "l2_cache_size": p.get("l2_cache_size"), "weights_precision": p["weights_precision"].name,
                    "optimizer": getattr(optimizer, "name", optimizer)})
    return out


def main():
    try:
        from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
        from torchrec.distributed.planner import EmbeddingShardingPlanner, Topology
    except ImportError as e:
        print("check_torchrec_key_value: skipped: no real torchrec here (%s); scripts/torchrec-venv.sh makes one" % e)
        return 77
    from torchrec.distributed.planner.types import ParameterConstraints
    from torchrec.distributed.quant_embeddingbag import QuantEmbeddingBagCollectionSharder
    from torchrec.distributed.types import KeyValueParams
    plan = load_plan(sys.argv[1])
    tables = json.load(open(sys.argv[2]))
    # An inference table on the SSD tier has no constraint (the quant sharders have no key-value
    # kernel): it is served unquantized through EmbeddingBagCollectionSharder with the sizes in
    # key_value_tables, as edo_only_why says.
    for name, kv in plan.key_value_tables.items():
        if not kv["in_constraints"]:
            plan.constraints[name] = ParameterConstraints(
                compute_kernels=["key_value"],
                key_value_params=KeyValueParams(max_l1_cache_size=kv["max_l1_cache_size_mb"], l2_cache_size=kv["l2_cache_size_gb"]))
    hbm = 64 * 1024 ** 3
    cuda = Topology(world_size=1, compute_device="cuda", hbm_cap=hbm)
    out = {"key_value_tables": plan.key_value_tables, "edo_only_why": plan.edo_only_why,
           "cuda": enumerate_options(plan, tables, cuda, plan.constraints)}
    # The estimator's device bytes for the L1 alone: the same options with max_l1_cache_size 0.
    no_l1 = copy.deepcopy(plan.constraints)
    for name in plan.key_value_tables:
        no_l1[name].key_value_params.max_l1_cache_size = 0
    out["cuda_no_l1"] = enumerate_options(plan, tables, cuda, no_l1)
    planner = EmbeddingShardingPlanner(topology=cuda, constraints=plan.constraints)
    sharding = planner.plan(model_of(tables, plan), [EmbeddingBagCollectionSharder(fused_params=dict(plan.fused_params))])
    out["planned"] = {}
    for params in sharding.plan.values():
        for name, ps in params.items():
            kv = ps.key_value_params
            out["planned"][name] = {"compute_kernel": ps.compute_kernel, "max_l1_cache_size": kv.max_l1_cache_size if kv else None,
                                    "l2_cache_size": kv.l2_cache_size if kv else None}
    out["runtime"] = runtime_tbes(plan, tables, sharding)
    out["cpu"] = enumerate_options(plan, tables, Topology(world_size=1, compute_device="cpu"), plan.constraints)
    sharder = EmbeddingBagCollectionSharder()
    out["sharder_kernels"] = {dev: sharder.compute_kernels("table_wise", dev) for dev in ("cpu", "cuda")}
    out["quant_sharder_kernels"] = QuantEmbeddingBagCollectionSharder().compute_kernels("table_wise", "cuda")
    out["no_ssd"] = enumerate_options(plan, tables, Topology(world_size=1, compute_device="cuda", hbm_cap=hbm, ssd_cap=0),
                                      plan.constraints)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
