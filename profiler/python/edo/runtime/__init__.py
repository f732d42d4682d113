"""The bottom of the package: the ctypes binding to libedo_trace.so (_native), the process's
mutable state (_state), table registration with the tracer (_tables) and the current CUDA stream
(_devices). Imports nothing of edo's above it."""
