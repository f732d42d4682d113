"""ctypes binding of the edo C API (profiler/include/edo/edo.h); edo_table_lookup, called on
every embedding forward, through the small C module edo.runtime._fastlookup where it was built.

The library is found, in order:
  1. in the process's global symbol namespace (``edo record`` LD_PRELOADs
     libedo_trace.so, so ``ctypes.CDLL(None)`` sees ``edo_table_register``);
  2. at ``$EDO_TRACE_LIB`` when that is set but the library was not preloaded
     (a launcher dropped LD_PRELOAD): it is loaded then, with a warning;
  3. otherwise a no-op backend is used and one warning is printed.

Every backend has the same methods, so tests can pass a fake object instead
(``edo.hooks._torch_hooks.set_backend``).
"""

import ctypes
import os
import sys

# edo_dtype
F32, F16, BF16, I8, U8, F8E4M3 = range(6)
# edo_index_type
I32, I64 = 0, 1
# edo_device
HOST, CUDA = 0, 1

ERRORS = {
    0: "ok",
    -1: "invalid argument",
    -2: "bad table handle",
    -3: "out of buffer space: the batch was dropped and counted",
    -4: "device indices given but no CUDA runtime is usable",
    -5: "a CUDA call failed",
    -6: "the same name was registered again with another shape",
}

_warned = set()


def warn_once(key, message):
    """Prints ``edo: message`` on stderr once per key."""
    if key in _warned:
        return
    _warned.add(key)
    try:
        sys.stderr.write("edo: %s\n" % message)
        sys.stderr.flush()
    except Exception:  # a closed stderr must not break the job
        pass


class NullBackend(object):
    """Used when libedo_trace.so is not loaded: every call does nothing."""

    available = False
    source = None

    def __init__(self):
        self._next = 0

    def table_register(self, name, base, rows, dim, dtype, device):
        self._next += 1
        return self._next - 1

    def table_lookup(self, table, indices, count, index_type, device, stream):
        return 0

    def table_set_extra_bytes(self, table, kind, nbytes):
        return 0

    def table_weights(self, table, ptr, row_stride, device, stream):
        return 0

    def step(self):
        return 0

    def release_gpu_capture(self, tool):
        return 0

    def note(self, key, value):
        return 0

    def strerror(self, code):
        return ERRORS.get(code, "unknown error %d" % code)


class NativeBackend(object):
    """Calls libedo_trace.so through ctypes."""

    available = True

    def __init__(self, lib, source, fast=True):
        self.source = source
        reg = lib.edo_table_register
        reg.restype = ctypes.c_int64
        reg.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32,
                        ctypes.c_int, ctypes.c_int]
        look = lib.edo_table_lookup
        look.restype = ctypes.c_int
        look.argtypes = [ctypes.c_int64, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int,
                         ctypes.c_int, ctypes.c_void_p]
        extra = lib.edo_table_set_extra_bytes
        extra.restype = ctypes.c_int
        extra.argtypes = [ctypes.c_int64, ctypes.c_char_p, ctypes.c_uint64]
        weights = getattr(lib, "edo_table_weights", None)  # absent in an older libedo_trace.so
        if weights is not None:
            weights.restype = ctypes.c_int
            weights.argtypes = [ctypes.c_int64, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int,
                                ctypes.c_void_p]
        step = lib.edo_step
        step.restype = ctypes.c_int
        step.argtypes = []
        err = lib.edo_strerror
        err.restype = ctypes.c_char_p
        err.argtypes = [ctypes.c_int]
        # edo_release_gpu_capture: absent from an older library (then nothing to hand over).
        rel = getattr(lib, "edo_release_gpu_capture", None)
        if rel is not None:
            rel.restype = ctypes.c_int
            rel.argtypes = [ctypes.c_char_p]
        self._release = rel
        # edo_note: absent from an older library (then the facts are not recorded).
        note = getattr(lib, "edo_note", None)
        if note is not None:
            note.restype = ctypes.c_int
            note.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        self._note = note
        self._lib = lib
        self._register = reg
        self._lookup = look
        # The per-lookup call goes straight to edo.runtime._fastlookup's C function bound to this
        # library's entry (no ctypes argument conversion), or to the ctypes function where
        # that module was not built; same arguments as the method below, one Python frame
        # less on every embedding forward.
        self.table_lookup = (fast and fast_lookup(look)) or look
        self._extra = extra
        self._weights = weights
        self._step = step
        self._strerror = err

    def table_register(self, name, base, rows, dim, dtype, device):
        return self._register(name.encode("utf-8", "replace"), base, rows, dim, dtype, device)

    def table_lookup(self, table, indices, count, index_type, device, stream):
        return self._lookup(table, indices, count, index_type, device, stream)

    def table_set_extra_bytes(self, table, kind, nbytes):
        return self._extra(table, kind.encode("utf-8", "replace"), nbytes)

    def table_weights(self, table, ptr, row_stride, device, stream):
        if self._weights is None:
            return 0
        return self._weights(table, ptr, row_stride, device, stream)

    def step(self):
        return self._step()

    def release_gpu_capture(self, tool):
        return self._release(tool.encode("utf-8", "replace")) if self._release else 0

    def note(self, key, value):
        if self._note is None:
            return 0
        return self._note(key.encode("utf-8", "replace"), value.encode("utf-8", "replace"))

    def strerror(self, code):
        try:
            s = self._strerror(code)
            return s.decode("utf-8", "replace") if s else ERRORS.get(code, "error %d" % code)
        except Exception:
            return ERRORS.get(code, "error %d" % code)


def fast_lookup(look):
    """edo.runtime._fastlookup.lookup calling ``look``'s C function (a ctypes function of
    edo_table_lookup's signature), or None where the module was not built."""
    try:
        from . import _fastlookup
    except ImportError:
        return None
    _fastlookup.bind(ctypes.cast(look, ctypes.c_void_p).value)
    return _fastlookup.lookup


def _has_api(lib):
    try:
        lib.edo_table_register  # noqa: B018 - attribute lookup is the test
        lib.edo_table_lookup
        lib.edo_step
        return True
    except AttributeError:
        return False


def load():
    """Returns the backend to use in this process (never raises)."""
    try:
        glob = ctypes.CDLL(None)
        if _has_api(glob):
            return NativeBackend(glob, "preloaded")
    except Exception:
        pass
    path = os.environ.get("EDO_TRACE_LIB")
    if path and os.path.exists(path):
        try:
            lib = ctypes.CDLL(path, mode=getattr(ctypes, "RTLD_GLOBAL", 0))
            if _has_api(lib):
                warn_once("late-load", "libedo_trace.so was not preloaded; loaded it from "
                          "EDO_TRACE_LIB=%s (allocations made before now are not seen)" % path)
                return NativeBackend(lib, path)
        except OSError as e:
            warn_once("load-failed", "cannot load EDO_TRACE_LIB=%s (%s); edo calls are no-ops"
                      % (path, e))
            return NullBackend()
    warn_once("not-loaded", "libedo_trace.so is not loaded (run the job under `edo record`); "
              "edo calls are no-ops")
    return NullBackend()
