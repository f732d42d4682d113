"""The "trim_vocab" lever of a plan (tuner/src/candidates/trim_candidates.h; docs/tuning.md "LLM levers"),
applied by edo.apply_plan to a token table and its LM head.

The table keeps the rows of the ids the remap keeps (``edo export --format vocab-remap``: the one
remap the tuner sized), copied from the trained weights in new-id order; an int64 buffer
``edo_vocab_remap`` (old id -> new id) on the table turns the ids the data loader feeds into new
ids before each lookup, so existing data loaders keep working. The head keeps the same rows: an
untied nn.Linear gets the kept rows of its weight (and bias), a tied one the table's new
Parameter. Its logits are then over the kept ids in new-id order: the loss's targets must go
through the same remap (the head carries the buffer too: ``model.lm_head.edo_vocab_remap[targets]``).

The remap comes with ``apply_plan(..., vocab_remap=FILE)``: passing it is the caller's word that
the job maps its targets (and its tokenizer, when it saves one) the same way. Without it, or
when the model is not the one the plan describes, the table is left as it was, with the reason.
"""

import json


def _torch():
    import torch
    return torch


def _load_remap(vocab_remap):
    if isinstance(vocab_remap, dict):
        return vocab_remap
    with open(vocab_remap) as f:
        return json.load(f)


def _export_hint(name, params):
    return ("edo export RUN.edodb --format vocab-remap --table %s --coverage %s -o remap.json, then "
            "apply_plan(model, plan, vocab_remap='remap.json')" % (name, params.get("vocab_coverage", "99.9")))


def _check_remap(remap, name, rows, params):
    """Why ``remap`` is not the one the plan sized for table ``name`` of ``rows`` rows ("" when it is)."""
    if not isinstance(remap, dict) or remap.get("format") != "edo.vocab_remap/1":
        return "the vocab_remap given is not an edo.vocab_remap/1 file"
    if remap.get("table") != name or remap.get("rows") != rows:
        return "the vocab_remap given is for table %r of %r rows, not %r of %d" % (
            str(remap.get("table"))[:60], remap.get("rows"), name, rows)
    kept, new_of = remap.get("kept_old_ids"), remap.get("new_id_of_old")
    if not isinstance(kept, list) or not isinstance(new_of, list) or len(new_of) != rows:
        return "the vocab_remap given has no kept_old_ids / new_id_of_old of the table's rows"
    want = params.get("vocab_coverage")
    if want is not None and abs(float(remap.get("coverage_target", -1)) * 100 - float(want)) > 1e-9:
        return "the vocab_remap given keeps the %s %% set, the plan the %s %% set" % (
            remap.get("coverage_target", 0) * 100, want)
    if params.get("kept_rows") is not None and len(kept) != params["kept_rows"]:
        return "the vocab_remap given keeps %d ids, the plan %d" % (len(kept), params["kept_rows"])
    return ""


def _find_head(model, m, w, params, prefix):
    """(head module or None, why-not): the plan's head, which must be an nn.Linear of the table's
    rows, tied (holding ``w``) when the plan says tied; no other module may read ``w``."""
    nn = _torch().nn
    pre = prefix + "." if prefix else ""
    name = params.get("head") or ""
    rel = name[len(pre):] if pre and name.startswith(pre) else name
    mods = dict(model.named_modules())
    head = mods.get(rel)
    for n, o in mods.items():
        if o is not m and o is not head and any(v is w for v in (getattr(o, "_parameters", None) or {}).values()):
            return None, "its weight is also read by %s %r, which trimming would leave with the old rows" % (
                type(o).__name__, n)
    if not isinstance(head, nn.Linear):
        return None, "the model has no nn.Linear head named %r (the plan's)" % name
    tied = params.get("head_kind") == "tied"
    if tied != (head.weight is w):
        return None, "the plan's head %r is %s, the model's is not" % (name, "tied" if tied else "untied")
    if head.weight.shape[0] != w.shape[0]:
        return None, "the head %r has %d outputs, the table %d rows" % (name, head.weight.shape[0], w.shape[0])
    return head, ""


def _swap_in_optimizer(optimizer, old, new, kept, undo):
    """Puts ``new`` where ``old`` was in ``optimizer``, its per-row state cut to the kept rows."""
    if optimizer is None:
        return False
    torch = _torch()
    for g in optimizer.param_groups:
        for i, p in enumerate(g["params"]):
            if p is old:
                g["params"][i] = new
                state = optimizer.state.pop(old, None)
                if state is not None:
                    optimizer.state[new] = {k: (v[kept].clone() if isinstance(v, torch.Tensor) and v.dim() > 0 and
                                                v.shape[0] == old.shape[0] else v) for k, v in state.items()}

                def back(g=g, i=i, state=state):
                    g["params"][i] = old
                    optimizer.state.pop(new, None)
                    if state is not None:
                        optimizer.state[old] = state
                undo.append(back)
                return True
    return False


def _cut(module, attr, kept, undo):
    """module.attr (a Parameter) replaced by its kept rows; returns (old, new)."""
    torch = _torch()
    old = getattr(module, attr)
    new = torch.nn.Parameter(old.detach()[kept].clone(), requires_grad=old.requires_grad)
    setattr(module, attr, new)
    undo.append(lambda: setattr(module, attr, old))
    return old, new


def _bytes(t):
    return 0 if t is None else int(t.numel()) * int(t.element_size())


def _set(obj, attr, value, undo):
    was = getattr(obj, attr)
    setattr(obj, attr, value)
    undo.append(lambda: setattr(obj, attr, was))


def _remap_ids(module, args):
    return (module.edo_vocab_remap[args[0]],) + tuple(args[1:])


def _add_remap(module, new_of, undo):
    module.register_buffer("edo_vocab_remap", new_of)
    undo.append(lambda: module._buffers.pop("edo_vocab_remap", None))


def trim(model, m, name, entry, params, optimizer, vocab_remap, prefix, undo):
    """Applies "trim_vocab" to table module ``m`` (a plain nn.Embedding/EmbeddingBag); updates entry."""
    torch = _torch()
    w = m.weight
    rows = int(w.shape[0])
    if vocab_remap is None:
        entry["applied"] = False
        entry["why"] += ("; not applied: trimming the vocabulary changes the ids the model reads and writes; give the "
                         "remap the tokenizer and data loader apply: " + _export_hint(name, params))
        return
    remap = _load_remap(vocab_remap)
    why = _check_remap(remap, name, rows, params)
    head, why_head = _find_head(model, m, w, params, prefix) if not why else (None, "")
    if why or why_head:
        entry["applied"] = False
        entry["why"] += "; not applied: %s (%s)" % (why or why_head, _export_hint(name, params))
        return
    if m.padding_idx is not None and m.padding_idx not in set(remap["kept_old_ids"]):
        entry["applied"] = False
        entry["why"] += ("; not applied: the padding id %d is not kept (it would read the UNK row): export the remap "
                         "with --unk %d" % (m.padding_idx, m.padding_idx))
        return
    kept = torch.tensor(remap["kept_old_ids"], dtype=torch.int64, device=w.device)
    new_of = torch.tensor(remap["new_id_of_old"], dtype=torch.int64, device=w.device)
    head_before = 0 if head.weight is w else sum(_bytes(t) for t in (head.weight, head.bias))
    old, new = _cut(m, "weight", kept, undo)
    in_opt = _swap_in_optimizer(optimizer, old, new, kept, undo)
    _set(m, "num_embeddings", len(kept), undo)
    if m.padding_idx is not None:
        _set(m, "padding_idx", int(new_of[m.padding_idx]), undo)
    if head.weight is old:
        _set(head, "weight", new, undo)
    else:
        for attr in ("weight", "bias"):
            if getattr(head, attr, None) is not None:
                hold, hnew = _cut(head, attr, kept, undo)
                _swap_in_optimizer(optimizer, hold, hnew, kept, undo)
    _set(head, "out_features", len(kept), undo)
    _add_remap(m, new_of, undo)
    _add_remap(head, new_of, undo)
    hook = m.register_forward_pre_hook(_remap_ids)
    undo.append(hook.remove)
    entry["freed_bytes"] = head_before - (0 if head.weight is new else sum(_bytes(t) for t in (head.weight, head.bias)))
    entry["why"] += ("; vocabulary trimmed to %d of %d ids (the %s %% set; other ids read UNK, old id %d): the table and "
                     "the head %r keep those rows, the ids fed are remapped by its edo_vocab_remap buffer; the logits are "
                     "over the new ids: map the targets with model.%s.edo_vocab_remap" % (
                         len(kept), rows, params.get("vocab_coverage", "?"), remap.get("unk", {}).get("old_id", -1),
                         params.get("head"), params.get("head")))
    if optimizer is not None and not in_opt:
        entry["why"] += "; the optimizer given does not train this table's weight"
    if optimizer is None:
        entry["why"] += "; no optimizer= given: make the optimizer after apply_plan (it must train the new Parameters)"
