# multiprocessing.Pool workers (fork) each record lookups through the C API (ctypes), then
# Pool.terminate() SIGTERMs them, idle or in their own os._exit(). The tracer installs no
# signal handler: a worker killed while idle keeps what its periodic flushes sent (the parent
# waits longer than EDO_FLUSH_MS, which the test sets, before terminating), one in os._exit
# finishes its final flush first. Every lookup must arrive. 4 tasks x 10 lookups of row k.
import ctypes
import multiprocessing as mp
import os
import time

lib = ctypes.CDLL(os.environ["EDO_TRACE_LIB"])
lib.edo_table_register.restype = ctypes.c_int64
weights = (ctypes.c_float * 1000)()
handle = lib.edo_table_register(b"py.emb", weights, ctypes.c_uint64(100), ctypes.c_uint32(10), 0, 0)


def work(k):
    idx = (ctypes.c_int64 * 10)(*([k] * 10))
    return lib.edo_table_lookup(ctypes.c_int64(handle), idx, ctypes.c_uint64(10), 1, 0, None)


if __name__ == "__main__":
    with mp.get_context("fork").Pool(2) as pool:
        print(pool.map(work, range(4)))
        time.sleep(0.3)
