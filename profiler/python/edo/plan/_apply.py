"""edo.apply_plan: converts the tables of a plain PyTorch model to what a plan chose.

Each table of the model that the plan names (its qualified module name, as edo records it) is
converted in place: its module keeps its place in the model and its parameter stays the same
Python object where the format allows it, so a tied table stays tied and optimizers built
afterwards see the new parameters. What PyTorch has no module for (offload with a device cache,
product quantisation, hashing, quotient-remainder, low rank, fp8) is left as it was, with the
reason.

Conversions:
  fp16 / bf16   the weight is cast in place (``param.data``); the module's output is cast back
                to the model's dtype by a forward hook. A dtype the lookup kernel of this PyTorch
                build lacks (bf16 EmbeddingBag on the CPU in 1.13) is refused after a test lookup.
                A training table keeps fp32 optimizer state and gets each update stochastically
                rounded into its fp16/bf16 weights (``_lowp``: FBGEMM's way). A weight that another
                module reads whole (a tied nn.Linear head, or the plan's "dense_use") is not cast.
  int8 / int4   inference only: rows are packed by FBGEMM's row-wise formats
                (``quantized::embedding_bag_byte_prepack`` / ``_4bit_prepack``: dim bytes + fp32
                scale and bias, or dim/2 bytes + fp16 scale and bias per row, the layout
                ``torch.ao.nn.quantized.EmbeddingBag`` holds for quint8 / quint4x2) and looked
                up by the same operators that module calls. The packed rows are a plain uint8
                buffer, so their bytes are countable and edo's hooks can record them.
  pruned        rows never read are dropped: an int32 remap (row -> kept row) and the kept rows
                plus one default row (zeros) that every dropped row maps to. Which rows were
                read is not in a plan file: pass ``rows_read={name: row ids}``.

The plan is validated whole before anything changes (``_plan_file.check_tables``, the rules of
tuner/src/io/plan_import.cpp): a PlanError leaves the model untouched, and a conversion that raises
midway is undone before the exception reaches the caller.

Training plans keep fp32/fp16/bf16 parameters (int8/int4 are refused for a training table); a
choice with ``"optimizer": "rowwise_adagrad"`` says the plan's bytes assume row-wise Adagrad:
train those parameters with ``edo.RowwiseAdagrad``.
"""

import json

from ._plan_file import PlanError, load_plan

_NO_MODULE = {
    "offload": "PyTorch has no module for a device cache of hot rows over a host table "
               "(TorchRec/FBGEMM's UVM caching kernels have one: edo export --format torchrec)",
    "pq": "PyTorch has no product-quantised embedding module",
    "multihash": "PyTorch has no multi-hash embedding module (the model must be retrained with one)",
    "qr": "PyTorch has no quotient-remainder embedding module (the model must be retrained with one)",
    "lowrank": "PyTorch has no low-rank embedding module; edo.apply_plan does not fit factors",
    "fp8": "PyTorch's embedding lookups have no fp8 kernel",
    "mch": "PyTorch has no managed-collision module (TorchRec's MCHManagedCollisionModule does: edo export --format "
           "torchrec, managed_collision; the model must be retrained with it)",
    "ssd": "PyTorch has no SSD-backed embedding module (FBGEMM's SSD TBE, TorchRec's key-value kernels, has one: "
           "edo export --format torchrec)",
}


def _torch():
    import torch
    return torch


def _tensor_bytes(t):
    return int(t.numel()) * int(t.element_size())


def module_bytes(m):
    """Bytes of a table module's parameters and buffers (each storage once)."""
    seen = set()
    total = 0
    for t in list(m.parameters(recurse=False)) + list(m.buffers(recurse=False)):
        key = (t.data_ptr(), t.numel(), t.dtype)
        if key in seen:
            continue
        seen.add(key)
        total += _tensor_bytes(t)
    return total


def _is_table(m):
    nn = _torch().nn
    return isinstance(m, (nn.Embedding, nn.EmbeddingBag, RowwiseQuantizedEmbedding, PrunedEmbedding))


def _set_module(root, name, new):
    parent = root
    parts = name.split(".")
    for p in parts[:-1]:
        parent = getattr(parent, p) if not p.isdigit() or not hasattr(parent, "__getitem__") else parent[int(p)]
    last = parts[-1]
    if hasattr(parent, "__setitem__") and last.isdigit():
        parent[int(last)] = new
    else:
        setattr(parent, last, new)


def _bag_lengths(offsets, n, include_last):
    torch = _torch()
    ends = offsets[1:] if include_last else torch.cat([offsets[1:], offsets.new_tensor([n])])
    starts = offsets[:-1] if include_last else offsets
    return (ends - starts).clamp(min=0)


class _InputCast(object):
    """Forward pre-hook: per-sample weights in the table's dtype (embedding_bag wants both alike)."""

    def __call__(self, module, args):
        if len(args) > 2 and args[2] is not None and args[2].dtype != module.weight.dtype:
            return args[:2] + (args[2].to(module.weight.dtype),) + tuple(args[3:])
        return None


class _OutputCast(object):
    """Forward hook: a converted table returns the dtype the rest of the model expects."""

    def __init__(self, dtype):
        self.dtype = dtype

    def __call__(self, module, args, out):
        return out.to(self.dtype)


def _make_classes():
    torch = _torch()
    nn = torch.nn
    F = nn.functional

    class RowwiseQuantizedEmbedding(nn.Module):
        """An EmbeddingBag or Embedding with row-wise int8 (quint8) or int4 (quint4x2) rows,
        for inference. ``weight`` (read-only) is the dequantised table, made on each access, for
        code that reads the weight directly (a functional lookup on a model table)."""

        def __init__(self, src, bits, name=""):
            super().__init__()
            w = src.weight.detach()
            self.bag = isinstance(src, nn.EmbeddingBag)
            self.bits = bits
            self.num_embeddings, self.embedding_dim = int(w.shape[0]), int(w.shape[1])
            self.mode = src.mode if self.bag else "sum"
            self.include_last_offset = bool(getattr(src, "include_last_offset", False))
            self.padding_idx = src.padding_idx
            self.out_dtype = w.dtype
            if not self.bag and src.max_norm is not None:
                # A lookup renormalises each row it reads (idempotently): doing it for every row
                # now gives the rows every later lookup would see.
                w = w.clone().float()
                with torch.no_grad():
                    torch.embedding_renorm_(w, torch.arange(w.shape[0], device=w.device), src.max_norm, src.norm_type)
            w = w.float().contiguous().cpu()
            pack = torch.ops.quantized.embedding_bag_byte_prepack if bits == 8 else torch.ops.quantized.embedding_bag_4bit_prepack
            self.register_buffer("packed", pack(w))
            self.edo_name = name
            self._edo_handle = None

        @property
        def weight(self):
            unpack = torch.ops.quantized.embedding_bag_byte_unpack if self.bits == 8 else torch.ops.quantized.embedding_bag_4bit_unpack
            return unpack(self.packed).to(self.out_dtype)

        def extra_repr(self):
            return "%d, %d, int%d rows, mode=%s" % (self.num_embeddings, self.embedding_dim, self.bits, self.mode)

        def forward(self, input, offsets=None, per_sample_weights=None):
            op = (torch.ops.quantized.embedding_bag_byte_rowwise_offsets if self.bits == 8
                  else torch.ops.quantized.embedding_bag_4bit_rowwise_offsets)
            if self._edo_handle is not None:
                from ..hooks import _calls
                _calls.lookup(self._edo_handle, input)
            shape = None
            last = self.include_last_offset
            if not self.bag:
                shape = tuple(input.shape)
                idx = input.reshape(-1).long()
                offsets = torch.arange(idx.numel(), dtype=torch.long, device=idx.device)
                last = False
            elif input.dim() == 2:
                b, l = input.shape
                idx = input.reshape(-1).long()
                offsets = torch.arange(0, b * l, l, dtype=torch.long, device=idx.device)
                if per_sample_weights is not None:
                    per_sample_weights = per_sample_weights.reshape(-1)
                last = False
            else:
                idx = input.long()
                offsets = offsets.long()
            psw = per_sample_weights.float() if per_sample_weights is not None else None
            if self.padding_idx is not None:
                keep = (idx != self.padding_idx).float()
                psw = keep if psw is None else psw * keep
            out = op(self.packed, idx, offsets, False, 0, False, psw, None, last)
            if self.mode == "mean":
                if self.padding_idx is not None:
                    cnt = torch.zeros(offsets.numel() - (1 if last else 0), device=idx.device)
                    seg = torch.repeat_interleave(torch.arange(cnt.numel(), device=idx.device),
                                                  _bag_lengths(offsets, idx.numel(), last))
                    cnt.index_add_(0, seg, (idx != self.padding_idx).float())
                else:
                    cnt = _bag_lengths(offsets, idx.numel(), last).float()
                out = out / cnt.clamp(min=1).unsqueeze(1)
            out = out.to(self.out_dtype)
            if shape is not None:
                out = out.reshape(shape + (self.embedding_dim,))
            return out

    class PrunedEmbedding(nn.Module):
        """An EmbeddingBag or Embedding whose unread rows were dropped: ``remap`` (int32, one
        entry per original row) points at the kept row or at the default row (the last, zeros)."""

        def __init__(self, src, rows_read):
            super().__init__()
            w = src.weight.detach()
            self.bag = isinstance(src, nn.EmbeddingBag)
            self.num_embeddings, self.embedding_dim = int(w.shape[0]), int(w.shape[1])
            keep = torch.unique(rows_read.reshape(-1).long().cpu())
            keep = keep[(keep >= 0) & (keep < self.num_embeddings)]
            if src.padding_idx is not None and not bool((keep == src.padding_idx).any()):
                keep = torch.sort(torch.cat([keep, keep.new_tensor([src.padding_idx])])).values
            self.kept_rows = int(keep.numel())
            remap = torch.full((self.num_embeddings,), self.kept_rows, dtype=torch.int32)
            remap[keep] = torch.arange(self.kept_rows, dtype=torch.int32)
            self.register_buffer("remap", remap.to(w.device))
            rows = torch.cat([w[keep.to(w.device)], torch.zeros(1, self.embedding_dim, dtype=w.dtype, device=w.device)])
            self.weight = nn.Parameter(rows, requires_grad=src.weight.requires_grad)
            self.padding_idx = int(remap[src.padding_idx]) if src.padding_idx is not None else None
            self.opts = dict(max_norm=src.max_norm, norm_type=src.norm_type,
                             scale_grad_by_freq=src.scale_grad_by_freq, sparse=src.sparse)
            if self.bag:
                self.opts.update(mode=src.mode, include_last_offset=src.include_last_offset)

        def extra_repr(self):
            return "%d rows (%d kept + default row), %d" % (self.num_embeddings, self.kept_rows, self.embedding_dim)

        def forward(self, input, offsets=None, per_sample_weights=None):
            idx = self.remap[input.long()].long()
            if self.bag:
                return F.embedding_bag(idx, self.weight, offsets.long() if offsets is not None else None,
                                       per_sample_weights=per_sample_weights, padding_idx=self.padding_idx, **self.opts)
            return F.embedding(idx, self.weight, padding_idx=self.padding_idx, **self.opts)

    class RowwiseAdagrad(torch.optim.Optimizer):
        """Row-wise Adagrad (FBGEMM's EXACT_ROWWISE_ADAGRAD): one fp32 accumulator per table
        row, the mean of the row's squared gradient; each row moves by
        lr * g / (sqrt(acc) + eps). Dense and sparse (nn.Embedding(sparse=True)) gradients;
        fp16/bf16 parameters are updated in fp32 and stored back. 2-D parameters only."""

        def __init__(self, params, lr=0.01, eps=1e-8, weight_decay=0.0):
            if not lr > 0 or not eps > 0 or weight_decay < 0:
                raise ValueError("RowwiseAdagrad: lr and eps must be > 0, weight_decay >= 0")
            super().__init__(params, dict(lr=lr, eps=eps, weight_decay=weight_decay))
            for g in self.param_groups:
                for p in g["params"]:
                    if p.dim() != 2:
                        raise ValueError("RowwiseAdagrad trains embedding tables (2-D parameters); "
                                         "got a %d-D parameter: give it another optimizer" % p.dim())

        @torch.no_grad()
        def step(self, closure=None):
            loss = None
            if closure is not None:
                with torch.enable_grad():
                    loss = closure()
            for g in self.param_groups:
                for p in g["params"]:
                    if p.grad is None:
                        continue
                    st = self.state[p]
                    if "sum" not in st:
                        st["sum"] = torch.zeros(p.shape[0], dtype=torch.float32, device=p.device)
                    grad = p.grad
                    if grad.is_sparse:
                        grad = grad.coalesce()
                        rows, vals = grad.indices()[0], grad.values().float()
                    else:
                        dense = grad.float()
                        rows = torch.nonzero(dense.abs().sum(1) > 0).reshape(-1)
                        vals = dense[rows]
                    if rows.numel() == 0:
                        continue
                    w = p.data[rows].float()
                    if g["weight_decay"]:
                        vals = vals + g["weight_decay"] * w
                    acc = st["sum"]
                    acc.index_add_(0, rows, (vals * vals).mean(1))
                    w -= g["lr"] * vals / (acc[rows].sqrt() + g["eps"]).unsqueeze(1)
                    p.data[rows] = w.to(p.dtype)
            return loss

    return RowwiseQuantizedEmbedding, PrunedEmbedding, RowwiseAdagrad


_classes = None


def _cls():
    global _classes
    if _classes is None:
        _classes = _make_classes()
    return _classes


class _Proxy(object):
    def __init__(self, i):
        self.i = i

    def __instancecheck__(self, obj):
        return isinstance(obj, _cls()[self.i])


RowwiseQuantizedEmbedding = _Proxy(0)
PrunedEmbedding = _Proxy(1)


def RowwiseAdagrad(params, lr=0.01, eps=1e-8, weight_decay=0.0):
    """Row-wise Adagrad for embedding tables (see _make_classes)."""
    return _cls()[2](params, lr=lr, eps=eps, weight_decay=weight_decay)


def _test_lookup(m):
    """Runs one lookup of row 0: raises when this PyTorch has no kernel for the module's dtype."""
    torch = _torch()
    dev = m.weight.device
    idx = torch.zeros(1, dtype=torch.long, device=dev)
    with torch.no_grad():
        if isinstance(m, torch.nn.EmbeddingBag):
            off = torch.tensor([0, 1] if m.include_last_offset else [0], device=dev)
            torch.nn.functional.embedding_bag(idx, m.weight, off, mode=m.mode,
                                              include_last_offset=m.include_last_offset)
        else:
            torch.nn.functional.embedding(idx, m.weight)


def _test_backward(m, dtype):
    """A backward through this module's lookup in ``dtype`` (a training table): raises when this
    PyTorch has no gradient kernel for it."""
    torch = _torch()
    F = torch.nn.functional
    dev = m.weight.device
    w = torch.zeros(2, int(m.weight.shape[1]), dtype=dtype, device=dev, requires_grad=True)
    idx = torch.zeros(1, dtype=torch.long, device=dev)
    with torch.enable_grad():
        if isinstance(m, torch.nn.EmbeddingBag):
            off = torch.tensor([0, 1] if m.include_last_offset else [0], device=dev)
            out = F.embedding_bag(idx, w, off, mode=m.mode, include_last_offset=m.include_last_offset,
                                  sparse=bool(m.sparse))
        else:
            out = F.embedding(idx, w, sparse=bool(m.sparse))
        # autograd.grad, not backward(): edo's own test is not the job's loss (pytorch.loss)
        torch.autograd.grad(out.float().sum(), w)


def _cast(m, dtype, undo, training=False):
    """fp16/bf16 in place: the Parameter object stays (tied modules and optimizers keep it).
    Appends to ``undo`` what puts the module back."""
    torch = _torch()
    old = m.weight.data
    if old.dtype == dtype:
        return None
    m.weight.data = old.to(dtype)
    try:
        _test_lookup(m)
        if training:
            _test_backward(m, dtype)
    except BaseException as e:
        m.weight.data = old
        if not isinstance(e, RuntimeError):
            raise   # not a missing kernel: apply_plan puts everything back and raises
        msg = str(e).splitlines()[0]
        return "this PyTorch %s has no %s %s kernel on %s (%s)" % (
            torch.__version__, str(dtype).replace("torch.", ""), "gradient" if training and "backward" in msg.lower()
            else "lookup", old.device.type, msg[:160])
    handles = []
    if not any(isinstance(h, _OutputCast) for h in m._forward_hooks.values()):
        handles.append(m.register_forward_hook(_OutputCast(old.dtype)))
        handles.append(m.register_forward_pre_hook(_InputCast()))

    def back(m=m, old=old, handles=handles):
        m.weight.data = old
        for h in handles:
            h.remove()
    undo.append(back)
    return None


def _dense_reader(model, m, w):
    """The name of a module of ``model`` other than the table's own that holds the same weight
    Parameter (a tied LM head: nn.Linear reads every row), or None."""
    for n, o in model.named_modules():
        if o is m or _is_table(o):
            continue
        params = getattr(o, "_parameters", None) or {}
        if any(v is w for v in params.values()):
            return "%s %r" % (type(o).__name__, n)
    return None


def _register_with_edo(new, name):
    # Under `edo record` the converted table is what the job now holds: registering its packed
    # rows lets the second recording measure them (the loop of `edo diff --plan`).
    try:
        from ..runtime._state import R, env_disabled
        if env_disabled() or not R.patched:
            return
        from ..hooks import _calls
        new._edo_handle = _calls.register_table(name, new.packed)
    except Exception:
        pass


def apply_plan(model, plan, training=None, rows_read=None, prefix="", optimizer=None, allow_tying=False,
               vocab_remap=None):
    """Converts, in place, each table of ``model`` that ``plan`` names to the plan's choice.

    ``plan``: a JSON/YAML plan file (``edo export``), an ``.edodb`` with a plan (``edo tune``),
    or an edo.plan/1 dict. ``training``: None takes the plan's word for each table (its
    "training": gradients or optimizer state were recorded; in older plans, a recorded optimizer);
    True/False overrides. ``rows_read``: {name: row
    ids} for pruned choices. ``prefix``: what the recording put in front of the model's module
    names (``edo.instrument(model, prefix)``). ``optimizer``: the job's optimizer, needed for a
    table the plan moves to a sparse gradient under SparseAdam ("sparse_adam", ``_levers``).
    ``allow_tying``: the model agrees to have its untied LM head tied to its token table when the
    plan says so (a tied model must be retrained; off by default). ``vocab_remap``: the file (or its
    dict) ``edo export --format vocab-remap`` wrote for a table the plan trims ("trim_vocab",
    ``_vocab_trim``); the job then maps its targets through ``<head>.edo_vocab_remap``.

    Returns {table name: {"strategy", "before_bytes", "after_bytes", "applied", "why",
    "optimizer"}} for every table of the plan; a table the model does not have is listed
    with applied False.
    """
    torch = _torch()
    # The whole plan is checked before anything changes (PlanError: one line, nothing touched).
    tables = load_plan(plan)
    undo = []
    try:
        with torch.no_grad():
            return _apply_tables(model, tables, training, rows_read, prefix, undo, optimizer, allow_tying, vocab_remap)
    except BaseException:
        # All or nothing: a conversion that failed midway puts back what was converted.
        for back in reversed(undo):
            try:
                back()
            except Exception:
                pass
        raise


def _apply_tables(model, tables, training, rows_read, prefix, undo, optimizer=None, allow_tying=False, vocab_remap=None):
    torch = _torch()
    nn = torch.nn
    Quant, Pruned, _ = _cls()
    rows_read = rows_read or {}
    pre = prefix + "." if prefix else ""
    modules = {pre + n: m for n, m in model.named_modules()
               if isinstance(m, (nn.Embedding, nn.EmbeddingBag, Quant, Pruned))}
    by_weight = {}
    for n, m in modules.items():
        w = getattr(m, "weight", None)
        if isinstance(w, torch.Tensor):
            by_weight.setdefault(id(w), []).append(n)
    done = {}  # id(original weight) -> (strategy, replacement or None)
    result = {}
    # Owners before the tables tied to them.
    order = sorted(tables, key=lambda t: t.get("strategy") == "shared")
    for t in order:
        name = t["name"]
        strategy = t.get("strategy", "unchanged")
        params = t.get("params") or {}
        entry = dict(strategy=strategy, before_bytes=0, after_bytes=0, applied=False, why="",
                     optimizer=t.get("optimizer") or "")
        result[name] = entry
        m = modules.get(name)
        if m is None:
            entry["why"] = "the model has no embedding table named %r (names are module paths%s)" % (
                name, ", after prefix %r" % prefix if prefix else "")
            continue
        before = module_bytes(m)
        entry["before_bytes"] = entry["after_bytes"] = before
        # Plans before "training" was written: a table trains when its optimizer state was recorded.
        is_training = bool(t.get("training", bool(t.get("recorded_optimizer")))) if training is None else bool(training)
        if strategy == "shared":
            owner = params.get("with", "")
            om = modules.get(owner)
            if om is None:
                entry["why"] = "tied to %r, which the model does not have" % owner
            elif om is m or (isinstance(om, Quant) and isinstance(m, Quant) and om.packed is m.packed) or (
                    isinstance(om._parameters.get("weight"), torch.Tensor) and m._parameters.get("weight") is om.weight):
                entry.update(applied=bool(result.get(owner, {}).get("applied", True)), after_bytes=0,
                             before_bytes=0, why="tied to %r: stays tied (one copy, counted there)" % owner)
            else:
                entry["why"] = "the plan ties it to %r but the model does not share their weights" % owner
            continue
        w = getattr(m, "weight", None)
        key = id(w)
        if not isinstance(m, (nn.Embedding, nn.EmbeddingBag)):
            entry["why"] = "already converted (%s)" % type(m).__name__
            continue
        if strategy in ("unchanged", "fp32") or (strategy in ("fp16", "bf16") and
                                                 str(w.dtype) == "torch." + {"fp16": "float16", "bf16": "bfloat16"}[strategy]):
            entry.update(applied=True, why="kept as it is (%s)" % str(w.dtype).replace("torch.", ""))
        elif strategy in _NO_MODULE:
            entry["why"] = "left as it was: " + _NO_MODULE[strategy]
        elif strategy in ("fp16", "bf16"):
            dtype = torch.float16 if strategy == "fp16" else torch.bfloat16
            reader = _dense_reader(model, m, w)
            dense = t.get("dense_use") or ""
            # How the plan says the table trains (the tuner's "train_precision"; default: FBGEMM's).
            tp = t.get("train_precision") or {}
            state_dtype = tp.get("optimizer_state", "fp32")
            rounding = tp.get("rounding", "stochastic")
            if is_training and (state_dtype not in ("fp32", strategy) or rounding not in ("stochastic", "nearest")):
                entry["why"] = ("left as it was: train_precision %s is not one edo.apply_plan knows (optimizer_state "
                                "fp32 or %s, rounding stochastic or nearest)" % (json.dumps(tp, sort_keys=True)[:120], strategy))
            elif reader is not None or dense:
                # A tied head (F.linear, matmul) would get low-precision weights against its
                # fp32 input: the job would fail or change. The plan's word or the model's.
                entry["why"] = ("left as it was: the weight is read whole by %s as well as by lookups; "
                                "a cast would give it %s weights" % (reader or "the model (%s)" % dense[:120], strategy))
            else:
                err = _cast(m, dtype, undo, training=is_training)
                if err:
                    entry["why"] = "left as it was: " + err
                else:
                    done[key] = (strategy, None)
                    why = "weights cast to %s in place (the output is cast back to the model's dtype)" % strategy
                    if is_training and isinstance(w, nn.Parameter) and w.requires_grad and state_dtype == "fp32":
                        from . import _lowp
                        _lowp.register(w, rounding)
                        undo.append(lambda w=w: _lowp.unregister(w))
                        why += ("; trained the FBGEMM way: the job's optimizer keeps fp32 state and each update "
                                "is rounded %s into the %s weights" % (
                                    "stochastically" if rounding == "stochastic" else "to nearest", strategy))
                    elif is_training:
                        why += "; the optimizer's state follows the weights in %s (the plan's train_precision)" % strategy
                    entry.update(applied=True, after_bytes=module_bytes(m), why=why)
        elif strategy in ("int8", "int4"):
            mode = getattr(m, "mode", "sum")
            if is_training:
                entry["why"] = ("left as it was: %s rows are for inference (PyTorch and FBGEMM train fp32/fp16/bf16 "
                                "weights); apply this plan to the serving model with training=False" % strategy)
            elif w.device.type != "cpu":
                entry["why"] = ("left as it was: PyTorch's quantized embedding_bag operators run on the CPU; "
                                "the table is on %s (fp16/bf16 run there, or TorchRec's QUANT kernels)" % w.device.type)
            elif mode == "max":
                entry["why"] = "left as it was: PyTorch's quantized EmbeddingBag has no max mode (sum and mean only)"
            elif getattr(m, "scale_grad_by_freq", False) and is_training:
                entry["why"] = "left as it was: scale_grad_by_freq needs trainable weights"
            else:
                others = [n for n in by_weight.get(key, []) if n != name]
                new = Quant(m, 8 if strategy == "int8" else 4, name)
                _set_module(model, name[len(pre):], new)
                undo.append(lambda n=name[len(pre):], old=m: _set_module(model, n, old))
                for o in others:  # a tied table stays tied: the same packed rows
                    om = modules[o]
                    if isinstance(om, (nn.Embedding, nn.EmbeddingBag)):
                        twin = Quant.__new__(Quant)
                        nn.Module.__init__(twin)
                        twin.__dict__.update({k: v for k, v in new.__dict__.items()
                                              if k not in ("_buffers", "_parameters", "_modules")})
                        twin.bag = isinstance(om, nn.EmbeddingBag)
                        twin.mode = om.mode if twin.bag else "sum"
                        twin.register_buffer("packed", new.packed)
                        _set_module(model, o[len(pre):], twin)
                        undo.append(lambda n=o[len(pre):], old=om: _set_module(model, n, old))
                        modules[o] = twin
                modules[name] = new
                _register_with_edo(new, name)
                done[key] = (strategy, new)
                entry.update(applied=True, after_bytes=module_bytes(new),
                             why="row-wise %s (%s rows, FBGEMM layout: %d bytes a row)" % (
                                 strategy, "quint8" if strategy == "int8" else "quint4x2",
                                 int(new.packed.shape[1])))
        elif strategy == "pruned":
            ids = rows_read.get(name)
            if ids is None:
                entry["why"] = ("left as it was: a plan does not say which rows were read; "
                                "pass rows_read={%r: row ids} (the rows the job reads)" % name)
            else:
                ids = torch.as_tensor(ids)
                new = Pruned(m, ids)
                want = params.get("kept_rows")
                if isinstance(want, int) and abs(new.kept_rows - want) > max(1, want // 100):
                    entry["why"] = ("left as it was: rows_read keeps %d rows, the plan %d (more than 1 %% apart)"
                                    % (new.kept_rows, want))
                else:
                    _set_module(model, name[len(pre):], new)
                    undo.append(lambda n=name[len(pre):], old=m: _set_module(model, n, old))
                    modules[name] = new
                    done[key] = (strategy, new)
                    entry.update(applied=True, after_bytes=module_bytes(new),
                                 why="%d of %d rows kept, the others read the default row (zeros)" % (
                                     new.kept_rows, new.num_embeddings))
        else:
            entry["why"] = "left as it was: strategy %r is not one edo.apply_plan knows" % strategy[:40]
        if entry["optimizer"] in ("sparse_adam", "sparse_adagrad", "frozen", "tie_head") and entry["applied"]:
            from . import _levers
            _levers.apply_lever(model, modules[name], entry, is_training, optimizer,
                                _dense_reader(model, modules[name], getattr(modules[name], "weight", None)), undo,
                                params=params, allow_tying=allow_tying, prefix=prefix)
        if entry["optimizer"] == "trim_vocab" and entry["applied"]:
            if isinstance(modules[name], (nn.Embedding, nn.EmbeddingBag)) and isinstance(modules[name].weight, nn.Parameter):
                from . import _vocab_trim
                _vocab_trim.trim(model, modules[name], name, entry, params, optimizer, vocab_remap, prefix, undo)
                entry["after_bytes"] = module_bytes(modules[name])
            else:
                entry.update(applied=False, why=entry["why"] + "; trim_vocab left out: the table is no longer a plain "
                             "nn.Embedding/EmbeddingBag")
        if entry["optimizer"] == "rowwise_adagrad" and is_training:
            entry["why"] += "; the plan's bytes assume row-wise Adagrad: train it with edo.RowwiseAdagrad"
    return result


__all__ = ["apply_plan", "load_plan", "PlanError", "RowwiseAdagrad", "module_bytes"]
