// Stream capture and CUDA graphs of the fake driver (fake_capture.cpp): internal to the fake
// libcuda.so.1 (fake_driver.cpp calls it from its entry points, fake_runtime.cpp through the
// fake_cuda_* functions of fake_cuda.h). What it models, from the CUDA 13.0 cuda.h:
//  * capture status NONE / ACTIVE / INVALIDATED (cuda.h:2381-2383); cuStreamIsCapturing on the
//    legacy stream while a blocking stream captures: CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
//    (cuda.h:15525-15528, error 906 at cuda.h:3110);
//  * the three interaction modes of cuThreadExchangeStreamCaptureMode (cuda.h:15454-15465):
//    a "potentially unsafe" call (an allocation, a synchronisation, an event query, a module
//    load) from a thread that the rules prohibit fails with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
//    (900, cuda.h:3074) and invalidates the conflicting captures, whose cuStreamEndCapture then
//    fails with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED (901, cuda.h:3080) and a NULL graph
//    (cuda.h:15487-15488);
//  * stream work on a capturing stream is recorded into the graph, not run; an event recorded
//    there is a captured event: cuEventQuery on it is CUDA_ERROR_CAPTURED_EVENT (907,
//    cuda.h:3116); another stream that waits on it joins the capture and must be joined back
//    (the origin stream waits on an event recorded on it after its work), else
//    cuStreamEndCapture fails with CUDA_ERROR_STREAM_CAPTURE_UNJOINED (904, cuda.h:3097); a
//    capturing stream waiting on an event recorded outside its capture is
//    CUDA_ERROR_STREAM_CAPTURE_ISOLATION (905, cuda.h:3104);
//  * a graph launch runs the captured work again; its kernels' activity records carry the
//    graph launch's correlation id.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>

namespace fake_capture {

using Work = std::function<void(uint32_t correlation)>;

void stream_created(CUstream s, unsigned flags);
// A potentially unsafe call (cuda.h:15442-15465) on the calling thread: CUDA_SUCCESS when the
// rules allow it, else CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (the conflicting captures are
// invalidated).
CUresult unsafe_call();
// Stream-ordered work on `s`. Returns false when it is to run now; true when it was recorded
// into (or refused by) the stream's capture, with the call's result in *r.
bool capture_work(CUstream s, const Work& work, CUresult* r);
CUresult event_record(CUevent e, CUstream s);
CUresult stream_wait_event(CUstream s, CUevent e);
CUresult event_query(CUevent e);  // CUDA_SUCCESS (everything has finished) or an error
CUresult stream_synchronize(CUstream s);
void event_destroyed(CUevent e);

CUresult begin(CUstream s, CUstreamCaptureMode mode);
CUresult end(CUstream s, CUgraph* graph);
CUresult is_capturing(CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id);
CUresult exchange_mode(CUstreamCaptureMode* mode);
CUresult instantiate(CUgraphExec* exec, CUgraph graph);
CUresult launch(CUgraphExec exec, CUstream s, uint32_t correlation);
CUresult graph_destroy(CUgraph graph);
CUresult exec_destroy(CUgraphExec exec);

// Driver calls that other threads made while a capture was active (fake_cuda_foreign_calls).
uint64_t foreign_calls();
void note_call();  // every entry point that a tool may call from its own thread

}  // namespace fake_capture
