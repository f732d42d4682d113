"""The current CUDA stream of a tensor's device, as the tracer takes it (an int), for the
lookups (_counting) and the weight snapshots (_weights) handed over without a host sync."""

from ._state import R


def current_stream(idx):
    """cudaStream_t of the current stream on idx's device, as an int (no Stream object when
    torch has the raw accessor that inductor uses)."""
    t = R.torch
    if R.raw_stream is None:
        f = getattr(getattr(t, "_C", None), "_cuda_getCurrentRawStream", None)
        R.raw_stream = f if f is not None else False
    if R.raw_stream is not False:
        try:
            return R.raw_stream(idx.get_device())
        except Exception:
            R.raw_stream = False
    return t.cuda.current_stream(idx.device).cuda_stream
