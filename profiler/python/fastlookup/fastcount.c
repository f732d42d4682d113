/* edo._fastlookup.count: the common eager call of an nn.Embedding / nn.EmbeddingBag forward
 * counted without running Python code (issue 32: 3 us a call).
 *
 * The Python hook (_counting.EdoPreHook.count_eager) does the same work in about 2 us on
 * torch 2.x, most of it the interpreter between a dozen tensor property reads. Here the reads
 * are the same (the public attributes and methods, through the C API: nothing of torch's
 * layout is assumed), minus the interpreter. Only the common case is taken: contiguous int32 /
 * int64 ids of exactly class torch.Tensor on the host, 1-D ids for an EmbeddingBag (with
 * offsets), a module whose hook state the Python path has validated and armed (a Record, below)
 * and that still holds. Anything else returns False before any side effect, and the caller runs
 * the Python path, which counts the call and arms the record again where it applies.
 *
 * A Record is one module's armed state: what the Python path checked (the backend, the state
 * object and its generation, the weight and its data pointer) and what it would write (the
 * table handle, the table's activation entry of _family: [output bytes, gradient bytes, calls,
 * last shape, table, bytes of one output row]). It is only armed once the first steps' dense-use
 * checks are over (State.dense_checks_left is 0 and never goes up again for that state object),
 * so the fast path never has _facts' tally to do.
 */
#include "fastlookup.h"

/* What arm() stored. count() works on a copy holding its own references: the Python code a
 * call may run (a torch function mode, a module's __getattribute__) could let another thread
 * disarm the record meanwhile. */
typedef struct {
  int bag;                /* an EmbeddingBag: one output row per bag */
  PyObject* backend;      /* R.backend, whose table_lookup is this module's lookup */
  PyObject* state;        /* _state.S */
  long long generation;   /* S.generation */
  PyObject* weight;
  void* weight_ptr;
  PyObject* table;        /* the _state.Table counted into (for the failure report) */
  long long handle;
  PyObject* act;          /* the table's activation entry (a list, _family.act_entry) */
  long long row_bytes;
} Armed;

typedef struct {
  PyObject_HEAD
  int armed;
  Armed a;
} Record;

/* Bound once by bind_hooks(): the objects the checks compare with. */
static struct {
  PyObject* runtime;       /* _state.R */
  PyObject* state_module;  /* _state (its S is replaced by a reset) */
  PyObject* tensor_type;   /* torch.Tensor */
  PyObject* strided;
  PyObject* int64;
  PyObject* int32;
  PyObject* grad_enabled;  /* torch.is_grad_enabled */
  PyObject* on_failure;    /* _counting._lookup_failed(table, rc) */
  PyObject* flag_owner;    /* torch.compiler, whose _is_compiling_flag count() reads, or NULL */
} g;

static PyObject* s_enabled, *s_backend, *s_S, *s_generation, *s_dirty, *s_parameters, *s_weight,
    *s_data_ptr, *s_layout, *s_is_cpu, *s_dtype, *s_is_contiguous, *s_numel,
    *s_include_last_offset, *s_requires_grad, *s_shape, *s_is_compiling_flag;

static PyTypeObject* record_type = NULL;

/* ---- the Record type ---------------------------------------------------------------------- */

static int record_traverse(Record* r, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(r));
  Py_VISIT(r->a.backend);
  Py_VISIT(r->a.state);
  Py_VISIT(r->a.weight);
  Py_VISIT(r->a.table);
  Py_VISIT(r->a.act);
  return 0;
}

static void armed_release(Armed* a) {
  Py_CLEAR(a->backend);
  Py_CLEAR(a->state);
  Py_CLEAR(a->weight);
  Py_CLEAR(a->table);
  Py_CLEAR(a->act);
}

/* A copy of `from` with references of its own (armed_release drops them). */
static void armed_copy(const Armed* from, Armed* to) {
  *to = *from;
  Py_XINCREF(to->backend);
  Py_XINCREF(to->state);
  Py_XINCREF(to->weight);
  Py_XINCREF(to->table);
  Py_XINCREF(to->act);
}

static int record_clear(Record* r) {
  r->armed = 0;
  armed_release(&r->a);
  return 0;
}

static void record_dealloc(Record* r) {
  PyTypeObject* tp = Py_TYPE(r);
  PyObject_GC_UnTrack(r);
  record_clear(r);
  freefunc free_slot = (freefunc)PyType_GetSlot(tp, Py_tp_free);
  free_slot(r);
  Py_DECREF(tp);
}

static void set_ref(PyObject** slot, PyObject* value) {
  PyObject* old = *slot;
  Py_INCREF(value);
  *slot = value;
  Py_XDECREF(old);
}

/* arm(backend, state, generation, weight, weight_ptr, table, handle, act, row_bytes, bag) */
static PyObject* record_arm(Record* r, PyObject* const* a, Py_ssize_t n) {
  if (n != 10) {
    PyErr_SetString(PyExc_TypeError, "Record.arm takes 10 arguments");
    return NULL;
  }
  const long long generation = PyLong_AsLongLong(a[2]);
  void* weight_ptr = PyLong_AsVoidPtr(a[4]);
  const long long handle = PyLong_AsLongLong(a[6]);
  const long long row_bytes = PyLong_AsLongLong(a[8]);
  const int bag = PyObject_IsTrue(a[9]);
  if (PyErr_Occurred()) return NULL;
  if (!PyList_Check(a[7]) || PyList_Size(a[7]) < 4) {
    PyErr_SetString(PyExc_TypeError, "Record.arm: the activation entry must be a list of 4+ items");
    return NULL;
  }
  set_ref(&r->a.backend, a[0]);
  set_ref(&r->a.state, a[1]);
  set_ref(&r->a.weight, a[3]);
  set_ref(&r->a.table, a[5]);
  set_ref(&r->a.act, a[7]);
  r->a.generation = generation;
  r->a.weight_ptr = weight_ptr;
  r->a.handle = handle;
  r->a.row_bytes = row_bytes;
  r->a.bag = bag;
  r->armed = 1;
  Py_RETURN_NONE;
}

static PyObject* record_disarm(Record* r, PyObject* unused) {
  (void)unused;
  record_clear(r);
  Py_RETURN_NONE;
}

static PyObject* record_get_armed(Record* r, void* unused) {
  (void)unused;
  return PyBool_FromLong(r->armed);
}

static PyMethodDef record_methods[] = {
    {"arm", (PyCFunction)(void (*)(void))record_arm, METH_FASTCALL,
     "arm(backend, state, generation, weight, weight_ptr, table, handle, act, row_bytes, bag)"},
    {"disarm", (PyCFunction)record_disarm, METH_NOARGS, "Forget the armed state."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef record_getset[] = {
    {"armed", (getter)record_get_armed, NULL, "True while count() may take this module's calls.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyType_Slot record_slots[] = {
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_dealloc, record_dealloc},
    {Py_tp_traverse, record_traverse},
    {Py_tp_clear, record_clear},
    {Py_tp_methods, record_methods},
    {Py_tp_getset, record_getset},
    {Py_tp_doc, "One embedding module's state armed for edo._fastlookup.count (fastcount.c)."},
    {0, NULL}};

static PyType_Spec record_spec = {"edo.runtime._fastlookup.Record", sizeof(Record), 0,
                                  Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, record_slots};

/* ---- count -------------------------------------------------------------------------------- */

/* obj.name (a new reference) where obj is a module object (torch.nn.functional, torch.compiler,
 * edo's _state): read from its dict, which is what PyObject_GetAttr finds for a name the dict
 * holds (a plain module's class has no descriptor of these names), without the type lookups
 * first. Any other object, and a name the dict lacks (a PEP 562 __getattr__), by PyObject_GetAttr. */
static PyObject* module_attr(PyObject* obj, PyObject* name) {
  if (Py_TYPE(obj) == &PyModule_Type) {   /* exactly a module: not a subclass with descriptors */
    PyObject* v = PyDict_GetItemWithError(PyModule_GetDict(obj), name);   /* borrowed */
    if (v != NULL) {
      Py_INCREF(v);
      return v;
    }
    if (PyErr_Occurred()) return NULL;
  }
  return PyObject_GetAttr(obj, name);
}

/* module.name for an embedding module, from its instance dict (PyObject_GenericGetDict): nn.Module
 * keeps _parameters and EmbeddingBag its include_last_offset there (torch/nn/modules/module.py
 * __init__: super().__setattr__("_parameters", {}); sparse.py: self.include_last_offset = ...),
 * and nn.Module's class-level __getattr__ hook costs a call and two type lookups a read (0.02-0.03
 * us). That is PyObject_GetAttr's answer while the module's class has no data descriptor of the
 * name: _fastcount.arm checks it before arming. A name the dict lacks: PyObject_GetAttr. */
static PyObject* module_instance_attr(PyObject* module, PyObject* name) {
  PyObject* d = PyObject_GenericGetDict(module, NULL);
  PyObject* v = d != NULL && PyDict_Check(d) ? PyDict_GetItemWithError(d, name) : NULL;
  Py_XINCREF(v);
  Py_XDECREF(d);
  if (v != NULL) return v;
  PyErr_Clear();
  return PyObject_GetAttr(module, name);
}

/* obj.name is `want` (identity); -1 on an error. `get`: how obj's attribute is read. */
static int attr_is_by(PyObject* (*get)(PyObject*, PyObject*), PyObject* obj, PyObject* name,
                      PyObject* want) {
  PyObject* v = get(obj, name);
  if (v == NULL) return -1;
  const int same = v == want;
  Py_DECREF(v);
  return same;
}

static int attr_is(PyObject* obj, PyObject* name, PyObject* want) {
  return attr_is_by(PyObject_GetAttr, obj, name, want);
}

/* obj.name() as a C integer; -1 with an exception set on an error. */
static long long call_ll(PyObject* obj, PyObject* name) {
  PyObject* v = PyObject_CallMethodObjArgs(obj, name, NULL);
  if (v == NULL) return -1;
  const long long x = PyLong_AsLongLong(v);
  Py_DECREF(v);
  return x;
}

/* The armed state still describes the process and the module (1). */
static int still_valid(const Armed* r, PyObject* module) {
  int ok = attr_is(g.runtime, s_backend, r->backend) == 1 &&
           attr_is_by(module_attr, g.state_module, s_S, r->state) == 1;
  if (ok) {
    PyObject* gen = PyObject_GetAttr(r->state, s_generation);
    ok = gen != NULL && PyLong_AsLongLong(gen) == r->generation;
    Py_XDECREF(gen);
  }
  if (ok) {
    PyObject* params = module_instance_attr(module, s_parameters);
    ok = params != NULL && PyDict_Check(params) && PyDict_GetItemWithError(params, s_weight) == r->weight;
    Py_XDECREF(params);
  }
  if (ok) {
    PyObject* p = PyObject_CallMethodObjArgs(r->weight, s_data_ptr, NULL);
    ok = p != NULL && PyLong_AsVoidPtr(p) == r->weight_ptr;
    Py_XDECREF(p);
  }
  return ok;
}

/* What one call hands over: filled by read_call, used once every check passed. */
typedef struct {
  void* data;
  long long n;
  int type;
  long long out_rows;  /* rows of output: ids (nn.Embedding), bags (nn.EmbeddingBag) */
  PyObject* shape;     /* new reference: what _family keeps as the last shape */
} Call;

/* The ids of an EmbeddingBag call: the bag count from 1-D offsets. 0: not the common case. */
static int read_bags(PyObject* module, PyObject* args, Call* c) {
  if (PyTuple_Size(args) < 2) return 0;
  PyObject* offsets = PyTuple_GetItem(args, 1);
  if ((PyObject*)Py_TYPE(offsets) != g.tensor_type) return 0;
  long long bags = call_ll(offsets, s_numel);
  if (bags < 0) return 0;
  PyObject* last = module_instance_attr(module, s_include_last_offset);
  if (last == NULL) return 0;
  const int t = PyObject_IsTrue(last);
  Py_DECREF(last);
  if (t < 0) return 0;
  bags -= t;
  c->out_rows = bags > 0 ? bags : 0;
  c->shape = PyLong_FromLongLong(c->out_rows);   /* _family: an int is a bag count */
  return c->shape != NULL;
}

/* The product of a tuple of sizes (numel), -1 on an error. */
static long long size_product(PyObject* size) {
  long long n = 1;
  for (Py_ssize_t i = 0; i < PyTuple_Size(size); ++i) {
    const long long d = PyLong_AsLongLong(PyTuple_GetItem(size, i));
    if (d < 0) return -1;
    n *= d;
  }
  return n;
}

/* The common case's checks on the ids (and offsets): 1 with `c` filled, 0 otherwise. */
static int read_call(const Armed* r, PyObject* module, PyObject* args, Call* c) {
  if (!PyTuple_Check(args) || PyTuple_Size(args) < 1) return 0;
  PyObject* idx = PyTuple_GetItem(args, 0);
  if ((PyObject*)Py_TYPE(idx) != g.tensor_type) return 0;
  if (attr_is(idx, s_layout, g.strided) != 1 || attr_is(idx, s_is_cpu, Py_True) != 1) return 0;
  PyObject* dt = PyObject_GetAttr(idx, s_dtype);
  if (dt == NULL) return 0;
  c->type = dt == g.int64 ? EDO_I64 : dt == g.int32 ? EDO_I32 : -1;
  Py_DECREF(dt);
  if (c->type < 0) return 0;
  PyObject* contiguous = PyObject_CallMethodObjArgs(idx, s_is_contiguous, NULL);
  if (contiguous == NULL) return 0;
  Py_DECREF(contiguous);
  if (contiguous != Py_True) return 0;
  /* numel() and dim() in one read: torch.Size is a tuple of the sizes (torch/_C/__init__.pyi:
   * "class Size(tuple[_int, ...])"); its product is numel(). */
  PyObject* size = PyObject_GetAttr(idx, s_shape);
  const Py_ssize_t dim = size != NULL && PyTuple_Check(size) ? PyTuple_Size(size) : -1;
  c->n = dim >= 0 ? size_product(size) : -1;
  if (c->n <= 0 || (r->bag && dim != 1)) {   /* no ids (or an error): the Python path */
    Py_XDECREF(size);
    return 0;
  }
  if (r->bag) {
    Py_DECREF(size);
    if (!read_bags(module, args, c)) return 0;
  } else {
    c->out_rows = c->n;
    /* 1-D ids: (n,) + (dim,) is what _family writes for an int too; else torch's Size */
    if (dim == 1) {
      Py_DECREF(size);
      size = PyLong_FromLongLong(c->n);
    }
    if ((c->shape = size) == NULL) return 0;
  }
  PyObject* p = PyObject_CallMethodObjArgs(idx, s_data_ptr, NULL);
  c->data = p != NULL ? PyLong_AsVoidPtr(p) : NULL;
  Py_XDECREF(p);
  return c->data != NULL && !PyErr_Occurred();
}

/* a[i] += by (a Python int); -1 on an error. */
static int list_add(PyObject* a, Py_ssize_t i, long long by) {
  const long long v = PyLong_AsLongLong(PyList_GetItem(a, i));
  if (v == -1 && PyErr_Occurred()) return -1;
  PyObject* nv = PyLong_FromLongLong(v + by);
  return nv == NULL ? -1 : PyList_SetItem(a, i, nv);
}

/* _family.account's work: the call's output bytes, and its gradient's when autograd records it. */
static int account(const Armed* r, Call* c) {
  const long long out = c->out_rows * r->row_bytes;
  int grad = attr_is(r->weight, s_requires_grad, Py_True);
  if (grad == 1) {
    PyObject* on = PyObject_CallNoArgs(g.grad_enabled);
    if (on == NULL) return -1;
    grad = on == Py_True;
    Py_DECREF(on);
  }
  if (grad < 0 || list_add(r->act, 0, out) < 0 || (grad && list_add(r->act, 1, out) < 0) ||
      list_add(r->act, 2, 1) < 0)
    return -1;
  PyObject* shape = c->shape;
  c->shape = NULL;
  return PyList_SetItem(r->act, 3, shape);   /* steals the reference */
}

/* What the forward's Python code asked before (it took 0.1-0.2 us there): `functional`.`fname`
 * is still edo's `wrapper` (wrap_forward's direct forward skips it), and no compile or export
 * session runs (torch.compiler._is_compiling_flag, when _fastcount.install found that
 * is_compiling() is that flag outside dynamo; dynamo's own tracing the forward's
 * is_dynamo_compiling() answered). 1: the fast path may go on. */
static int forward_may_skip(PyObject* functional, PyObject* fname, PyObject* wrapper) {
  PyObject* f = module_attr(functional, fname);
  const int same = f == wrapper;
  Py_XDECREF(f);
  if (same && g.flag_owner != NULL) return attr_is_by(module_attr, g.flag_owner, s_is_compiling_flag, Py_False) == 1;
  return same;
}

/* count(record, module, args, functional, fname, wrapper) -> True when the call was counted
 * here, False when the caller must run the Python path (nothing was done then). */
static PyObject* fc_count(PyObject* self, PyObject* const* a, Py_ssize_t n) {
  (void)self;
  if (n != 6 || record_type == NULL || (PyObject*)Py_TYPE(a[0]) != (PyObject*)record_type) {
    PyErr_SetString(PyExc_TypeError,
                    "count(record, module, args, functional, fname, wrapper): record must be a Record");
    return NULL;
  }
  Record* rec = (Record*)a[0];
  if (!rec->armed || fl_entry == NULL || g.runtime == NULL) Py_RETURN_FALSE;
  if (!forward_may_skip(a[3], a[4], a[5])) {
    PyErr_Clear();
    Py_RETURN_FALSE;
  }
  Armed r;
  armed_copy(&rec->a, &r);
  if (attr_is(g.runtime, s_enabled, Py_True) != 1 || !still_valid(&r, a[1])) {
    if (!PyErr_Occurred()) record_clear(rec);   /* changed: the Python path checks and re-arms */
    PyErr_Clear();
    armed_release(&r);
    Py_RETURN_FALSE;
  }
  Call c = {NULL, 0, 0, 0, NULL};
  if (!read_call(&r, a[1], a[2], &c)) {
    Py_XDECREF(c.shape);
    PyErr_Clear();
    armed_release(&r);
    Py_RETURN_FALSE;
  }
  const int rc = fl_entry((int64_t)r.handle, c.data, (uint64_t)c.n, (edo_index_type)c.type, EDO_HOST, NULL);
  /* Counted: from here on the call is done, whatever happens to the bookkeeping below (a
   * failure there, out of memory, loses an activation figure, never the job's forward). */
  if (PyObject_SetAttr(r.state, s_dirty, Py_True) < 0 || account(&r, &c) < 0) PyErr_Clear();
  Py_XDECREF(c.shape);
  if (rc < 0) {
    PyObject* res = PyObject_CallFunction(g.on_failure, "Oi", r.table, rc);
    Py_XDECREF(res);
    PyErr_Clear();
  }
  armed_release(&r);
  Py_RETURN_TRUE;
}

/* bind_hooks(runtime, state_module, Tensor, strided, int64, int32, is_grad_enabled, on_failure,
 *            flag_owner): flag_owner None: no compile flag to read. */
static PyObject* fc_bind_hooks(PyObject* self, PyObject* const* a, Py_ssize_t n) {
  (void)self;
  if (n != 9) {
    PyErr_SetString(PyExc_TypeError, "bind_hooks takes 9 arguments");
    return NULL;
  }
  PyObject** slots[] = {&g.runtime, &g.state_module, &g.tensor_type, &g.strided,
                        &g.int64,   &g.int32,        &g.grad_enabled, &g.on_failure};
  for (int i = 0; i < 8; ++i) set_ref(slots[i], a[i]);
  if (a[8] == Py_None) Py_CLEAR(g.flag_owner);
  else set_ref(&g.flag_owner, a[8]);
  Py_RETURN_NONE;
}

static PyMethodDef fc_methods[] = {
    {"count", (PyCFunction)(void (*)(void))fc_count, METH_FASTCALL,
     "count(record, module, args, functional, fname, wrapper) -> True: counted here; False: run "
     "the Python path."},
    {"bind_hooks", (PyCFunction)(void (*)(void))fc_bind_hooks, METH_FASTCALL,
     "bind_hooks(runtime, state_module, Tensor, strided, int64, int32, is_grad_enabled, on_failure, "
     "flag_owner)"},
    {NULL, NULL, 0, NULL}};

static int intern_names(void) {
  struct {
    PyObject** slot;
    const char* text;
  } names[] = {{&s_enabled, "enabled"},       {&s_backend, "backend"},
               {&s_S, "S"},                   {&s_generation, "generation"},
               {&s_dirty, "dirty"},           {&s_parameters, "_parameters"},
               {&s_weight, "weight"},         {&s_data_ptr, "data_ptr"},
               {&s_layout, "layout"},         {&s_is_cpu, "is_cpu"},
               {&s_dtype, "dtype"},           {&s_is_contiguous, "is_contiguous"},
               {&s_numel, "numel"},
               {&s_include_last_offset, "include_last_offset"},
               {&s_requires_grad, "requires_grad"}, {&s_shape, "shape"},
               {&s_is_compiling_flag, "_is_compiling_flag"}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
    if ((*names[i].slot = PyUnicode_InternFromString(names[i].text)) == NULL) return -1;
  return 0;
}

int fastcount_init(PyObject* module) {
  if (intern_names() < 0) return -1;
  record_type = (PyTypeObject*)PyType_FromSpec(&record_spec);
  if (record_type == NULL) return -1;
  Py_INCREF(record_type);
  if (PyModule_AddObject(module, "Record", (PyObject*)record_type) < 0) {
    Py_DECREF(record_type);
    return -1;
  }
  return PyModule_AddFunctions(module, fc_methods);
}
