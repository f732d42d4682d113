"""A Python job that handles its own signals, for the tracer's signal tests.

    signal_job.py MODE CHECKPOINT

It prints the dispositions Python sees at start (they must read the same with and without
edo), registers a 1000-row table and reads rows 0..99 ten times each through the C API when
libedo_trace.so is loaded (1000 lookups), prints "ready <pid>", and waits for a signal:

  keyboard   catches KeyboardInterrupt (SIGINT, Ctrl-C), writes CHECKPOINT in the handler,
             prints "finally" from the finally block, exits 0
  unhandled  does not catch it: the finally block writes CHECKPOINT, then Python ends by
             SIGINT (exit 130)
  term       installs its own SIGTERM handler, which writes CHECKPOINT and exits 7
"""
import ctypes
import os
import signal
import sys
import time

mode, checkpoint = sys.argv[1], sys.argv[2]
print("SIGINT %r SIGTERM %r" % (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)), flush=True)

lib = ctypes.CDLL(None)
if hasattr(lib, "edo_table_register"):
    lib.edo_table_register.restype = ctypes.c_int64
    weights = (ctypes.c_float * 8000)()
    handle = lib.edo_table_register(b"ckpt.emb", weights, ctypes.c_uint64(1000), ctypes.c_uint32(8), 0, 0)
    idx = (ctypes.c_int64 * 100)(*range(100))
    for _ in range(10):
        lib.edo_table_lookup(ctypes.c_int64(handle), idx, ctypes.c_uint64(100), 1, 0, None)


def save(why):
    with open(checkpoint, "w") as f:
        f.write(why)


if mode == "term":
    def on_term(sig, frame):
        save("sigterm")
        sys.exit(7)
    signal.signal(signal.SIGTERM, on_term)

try:
    # Inside the try: the test signals as soon as it reads this line, which can be before
    # print() returns.
    print("ready %d" % os.getpid(), flush=True)
    while True:
        time.sleep(0.05)
except KeyboardInterrupt:
    if mode == "keyboard":
        save("keyboard")
        print("caught KeyboardInterrupt", flush=True)
    else:
        raise
finally:
    if mode == "unhandled":
        save("finally")
    print("finally", flush=True)
