"""The training levers of a plan (issue 33; docs/tuning.md "Sparse gradients and freezing"),
applied by edo.apply_plan after a table's format:

  "sparse_adam"     nn.Embedding/EmbeddingBag(sparse=True): the gradient holds one row and one
                    int64 index per lookup of a step instead of the whole table. Adam/AdamW
                    refuse sparse gradients, so the table moves to torch.optim.SparseAdam with the
                    job optimizer's lr, betas and eps: pass the job's optimizer
                    (``apply_plan(..., optimizer=opt)``); the table's parameter leaves it and its
                    ``step()``/``zero_grad()`` drive the SparseAdam as well, so the training loop
                    is unchanged. Without ``optimizer=`` the table is left as it was (a sparse
                    gradient reaching Adam would stop the job).
  "sparse_adagrad"  sparse=True; torch.optim.Adagrad takes sparse gradients itself (without
                    weight decay, which the tuner checked), so no optimizer change is needed.
  "frozen"          requires_grad=False: no gradient, no optimizer state; the weights are kept.
                    Only a plan tuned with ``edo tune --fine-tune`` offers it.
  "tie_head"        the untied LM head named in params["head"] (an nn.Linear of the table's shape)
                    is given the table's weight Parameter; its own weight (with its gradient and,
                    given ``optimizer=``, its optimizer state) is freed. The model's outputs
                    change, so it must be retrained: applied only when the caller opts in with
                    ``apply_plan(..., allow_tying=True)``.
"""


def _torch():
    import torch
    return torch


def _drop_from_optimizer(optimizer, w):
    """Removes ``w`` from ``optimizer``'s groups and state; returns (group, undo)."""
    found = None
    for g in optimizer.param_groups:
        for i, p in enumerate(g["params"]):
            if p is w:
                found = (g, i)
    if found is None:
        return None, None
    g, i = found
    state = optimizer.state.pop(w, None)
    del g["params"][i]

    def undo(g=g, i=i, state=state):
        g["params"].insert(i, w)
        if state is not None:
            optimizer.state[w] = state
    return g, undo


def _chain(optimizer, sparse, undo):
    """The job's optimizer.step()/zero_grad() also drive ``sparse`` (instance attributes, so the
    class and other optimizers are untouched)."""
    riders = getattr(optimizer, "_edo_sparse_riders", None)
    if riders is None:
        riders = []
        step, zero = optimizer.step, optimizer.zero_grad

        def chained_step(*a, **k):
            out = step(*a, **k)
            for r in riders:
                r.step()
            return out

        def chained_zero(*a, **k):
            out = zero(*a, **k)
            for r in riders:
                r.zero_grad(*a, **k)
            return out
        optimizer.step, optimizer.zero_grad = chained_step, chained_zero
        optimizer._edo_sparse_riders = riders

        def unchain():
            for attr in ("step", "zero_grad", "_edo_sparse_riders"):
                optimizer.__dict__.pop(attr, None)
        undo.append(unchain)
    riders.append(sparse)
    undo.append(lambda: riders.remove(sparse) if sparse in riders else None)


def _tensor_bytes(t):
    return 0 if t is None else int(t.numel()) * int(t.element_size())


def _tie_head(model, m, entry, params, optimizer, allow_tying, prefix, undo):
    torch = _torch()
    nn = torch.nn
    head_name = params.get("head") or ""
    if not allow_tying:
        entry["applied"] = False
        entry["why"] += ("; not applied: the plan ties %r to this table, which changes the model (it must be "
                         "retrained): apply_plan(model, plan, allow_tying=True) to opt in" % head_name)
        return
    pre = prefix + "." if prefix else ""
    rel = head_name[len(pre):] if pre and head_name.startswith(pre) else head_name
    head = dict(model.named_modules()).get(rel)
    w = m.weight
    if not isinstance(head, nn.Linear):
        entry["applied"] = False
        entry["why"] += "; not applied: the model has no nn.Linear head named %r" % head_name
        return
    old = head.weight
    if old is w:
        entry["why"] += "; %r is already tied to it" % head_name
        return
    if tuple(old.shape) != tuple(w.shape) or old.dtype != w.dtype or old.device != w.device:
        entry["applied"] = False
        entry["why"] += "; not applied: %r holds %s %s, the table %s %s" % (
            head_name, tuple(old.shape), old.dtype, tuple(w.shape), w.dtype)
        return
    freed = _tensor_bytes(old) + _tensor_bytes(old.grad)
    if optimizer is not None:
        state = optimizer.state.get(old, {})
        freed += sum(_tensor_bytes(v) for v in state.values() if isinstance(v, torch.Tensor) and v.dim() > 0)
        _, back = _drop_from_optimizer(optimizer, old)
        if back is not None:
            undo.append(back)
    head.weight = w
    undo.append(lambda: setattr(head, "weight", old))
    entry["freed_bytes"] = freed
    entry["why"] += ("; %r tied to it (its own weight%s freed: %d bytes); the model must be retrained tied"
                     % (head_name, ", gradient and optimizer state" if optimizer is not None else " and gradient", freed))


def apply_lever(model, m, entry, is_training, optimizer, dense_reader, undo, params=None, allow_tying=False,
                prefix=""):
    """Applies entry["optimizer"] (a lever above) to table module ``m``; updates entry."""
    torch = _torch()
    nn = torch.nn
    lever = entry["optimizer"]
    w = getattr(m, "weight", None)
    if lever == "tie_head":
        if not isinstance(m, (nn.Embedding, nn.EmbeddingBag)) or not isinstance(w, nn.Parameter):
            entry["applied"] = False
            entry["why"] += "; tie_head left out: the table is no longer a plain nn.Embedding/EmbeddingBag"
            return
        _tie_head(model, m, entry, params or {}, optimizer, allow_tying, prefix, undo)
        return
    if not is_training:
        entry["why"] += "; %s left out: the table is not trained here" % lever
        entry["applied"] = False
        return
    if not isinstance(m, (nn.Embedding, nn.EmbeddingBag)) or not isinstance(w, nn.Parameter):
        entry["why"] += "; %s left out: the table is no longer a plain nn.Embedding/EmbeddingBag" % lever
        entry["applied"] = False
        return
    if dense_reader is not None:
        entry["why"] += "; %s left out: the weight is read whole by %s as well" % (lever, dense_reader)
        entry["applied"] = False
        return
    if lever == "frozen":
        was = w.requires_grad
        w.requires_grad_(False)
        w.grad = None
        undo.append(lambda: w.requires_grad_(was))
        if optimizer is not None:
            _, back = _drop_from_optimizer(optimizer, w)
            if back is not None:
                undo.append(back)
        entry["why"] += "; frozen: requires_grad=False (no gradient, no optimizer state; weights kept)"
        return
    if lever == "sparse_adagrad":
        was = m.sparse
        m.sparse = True
        undo.append(lambda: setattr(m, "sparse", was))
        entry["why"] += "; sparse=True: its gradient holds the rows a step reads (torch.optim.Adagrad takes it as it is)"
        return
    if lever == "sparse_adam":
        if optimizer is None:
            entry["applied"] = False
            entry["why"] += ("; not applied: the plan moves it to a sparse gradient with torch.optim.SparseAdam, which "
                             "needs the job's optimizer: apply_plan(model, plan, optimizer=opt)")
            return
        g, back = _drop_from_optimizer(optimizer, w)
        if g is None:
            entry["applied"] = False
            entry["why"] += "; not applied: the optimizer given does not train this table's weight"
            return
        undo.append(back)
        kw = dict(lr=g.get("lr", 1e-3))
        if "betas" in g:
            kw["betas"] = tuple(g["betas"])
        if "eps" in g:
            kw["eps"] = g["eps"]
        sparse = torch.optim.SparseAdam([w], **kw)
        was = m.sparse
        m.sparse = True
        undo.append(lambda: setattr(m, "sparse", was))
        _chain(optimizer, sparse, undo)
        entry["sparse_optimizer"] = sparse
        entry["why"] += ("; sparse=True, trained by torch.optim.SparseAdam (lr %g) driven by the job's optimizer's "
                         "step() and zero_grad()" % kw["lr"])
        return
