/* edo._fastlookup: edo_table_lookup called from Python without ctypes.
 *
 * The PyTorch hooks hand every embedding forward's index buffer to libedo_trace.so; through
 * ctypes that call converts six arguments by their argtypes and costs about 0.5 us, a sixth
 * of the per-call budget (issue 32). This module is one METH_FASTCALL function with the same
 * arguments as the ctypes function, `lookup(table, indices, count, index_type, device,
 * stream)`, calling the edo_table_lookup whose address _native.py resolved through ctypes and
 * passed once to `bind(address)`. It does not link libedo_trace.so (the preload library stays
 * the only copy in the process) and uses the limited API (abi3): one build serves every
 * CPython >= 3.10. Where it is absent (no Python.h at build time) _native.py keeps ctypes.
 *
 * fastcount.c adds the rest of the common eager case of an nn.Embedding / nn.EmbeddingBag
 * forward (its checks and activation accounting) to the same module: `count(record, module,
 * args)`.
 */
#include "fastlookup.h"

/* One libedo_trace.so per process: its entry point, set by bind(). */
edo_lookup_fn fl_entry = NULL;

static PyObject* fl_bind(PyObject* self, PyObject* address) {
  (void)self;
  void* p = PyLong_AsVoidPtr(address);
  if (p == NULL) {
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_ValueError, "bind: the address of edo_table_lookup is 0");
    return NULL;
  }
  fl_entry = (edo_lookup_fn)p;
  Py_RETURN_NONE;
}

/* stream: None or an integer (a cudaStream_t), as the ctypes c_void_p argument takes. */
static int to_pointer(PyObject* o, void** out) {
  if (o == Py_None) {
    *out = NULL;
    return 0;
  }
  *out = PyLong_AsVoidPtr(o);
  return (*out == NULL && PyErr_Occurred()) ? -1 : 0;
}

static PyObject* fl_lookup(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 6) {
    PyErr_SetString(PyExc_TypeError,
                    "lookup(table, indices, count, index_type, device, stream) takes 6 arguments");
    return NULL;
  }
  if (fl_entry == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "lookup: call bind(address of edo_table_lookup) first");
    return NULL;
  }
  const long long table = PyLong_AsLongLong(args[0]);
  void* indices = NULL;
  const unsigned long long count = PyLong_AsUnsignedLongLong(args[2]);
  const long type = PyLong_AsLong(args[3]);
  const long device = PyLong_AsLong(args[4]);
  void* stream = NULL;
  if (PyErr_Occurred() || to_pointer(args[1], &indices) < 0 || to_pointer(args[5], &stream) < 0)
    return NULL;
  /* The GIL stays held (ctypes would release it): the call copies the ids into a queue and
   * never waits, and handing the GIL over to another thread on every forward would cost more
   * than the call itself. */
  const int rc = fl_entry((int64_t)table, indices, (uint64_t)count, (edo_index_type)type,
                          (edo_device)device, stream);
  return PyLong_FromLong(rc);
}

static PyMethodDef fl_methods[] = {
    {"bind", (PyCFunction)fl_bind, METH_O, "bind(address): the edo_table_lookup to call."},
    {"lookup", (PyCFunction)(void (*)(void))fl_lookup, METH_FASTCALL,
     "lookup(table, indices, count, index_type, device, stream) -> edo_table_lookup's result."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef fl_module = {PyModuleDef_HEAD_INIT, "_fastlookup",
                                       "edo_table_lookup without ctypes (see fastlookup.c).", -1,
                                       fl_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fastlookup(void) {
  PyObject* m = PyModule_Create(&fl_module);
  if (m != NULL && fastcount_init(m) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
