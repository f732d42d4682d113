/* Shared by the two halves of edo._fastlookup: fastlookup.c (the module, lookup/bind) and
 * fastcount.c (the eager counting fast path of an embedding module's forward). */
#pragma once

#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "edo/edo.h"

typedef int (*edo_lookup_fn)(int64_t, const void*, uint64_t, edo_index_type, edo_device, void*);

/* libedo_trace.so's edo_table_lookup, set by bind() (NULL before). */
extern edo_lookup_fn fl_entry;

/* Adds fastcount.c's Record type and its functions to the module; -1 with an exception set. */
int fastcount_init(PyObject* module);
