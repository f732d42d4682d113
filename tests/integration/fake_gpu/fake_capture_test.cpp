// The fake driver's stream capture against what cuda.h documents (fake_capture.h cites the
// lines): the three capture interaction modes, CUDA's error codes, forks that must be joined,
// captured events, and graphs that replay the captured work.
#include <gtest/gtest.h>

#include <thread>

#include "fake_cuda.h"

namespace {

int runs = 0;
void bump(void**, unsigned, unsigned) { ++runs; }

struct Streams {
  CUstream s = nullptr, other = nullptr;
  Streams() {
    cuStreamCreate(&s, 0);  // blocking, like cudaStreamCreate's
    cuStreamCreate(&other, CU_STREAM_NON_BLOCKING);
  }
};

CUresult on_other_thread(CUstreamCaptureMode mode, CUresult (*call)()) {
  CUresult r = CUDA_SUCCESS;
  std::thread([&] {
    CUstreamCaptureMode m = mode;
    cuThreadExchangeStreamCaptureMode(&m);
    r = call();
  }).join();
  return r;
}

CUresult synchronize_own_stream() {
  static CUstream own = [] {
    CUstream s;
    cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    return s;
  }();
  return cuStreamSynchronize(own);
}

}  // namespace

TEST(FakeCapture, GlobalCaptureIsInvalidatedByAnUnsafeCallOfAGlobalModeThread) {
  Streams st;
  ASSERT_EQ(cuStreamBeginCapture_v2(st.s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(on_other_thread(CU_STREAM_CAPTURE_MODE_GLOBAL, synchronize_own_stream), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUstreamCaptureStatus status;
  ASSERT_EQ(cuStreamIsCapturing(st.s, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  CUgraph g = reinterpret_cast<CUgraph>(0x1);
  EXPECT_EQ(cuStreamEndCapture(st.s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(g, nullptr);
}

TEST(FakeCapture, RelaxedAndThreadLocalThreadsLeaveAnotherThreadsCaptureAlone) {
  Streams st;
  for (CUstreamCaptureMode mode : {CU_STREAM_CAPTURE_MODE_RELAXED, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL}) {
    ASSERT_EQ(cuStreamBeginCapture_v2(st.s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    EXPECT_EQ(on_other_thread(mode, synchronize_own_stream), CUDA_SUCCESS) << mode;
    CUgraph g = nullptr;
    EXPECT_EQ(cuStreamEndCapture(st.s, &g), CUDA_SUCCESS) << mode;
    EXPECT_NE(g, nullptr);
    cuGraphDestroy(g);
  }
}

TEST(FakeCapture, TheCapturingThreadItselfMayNotAllocateUnlessRelaxed) {
  Streams st;
  ASSERT_EQ(cuStreamBeginCapture_v2(st.s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
  CUdeviceptr p = 0;
  EXPECT_EQ(cuMemAlloc_v2(&p, 64), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUgraph g = nullptr;
  EXPECT_EQ(cuStreamEndCapture(st.s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  ASSERT_EQ(cuStreamBeginCapture_v2(st.s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
  cuThreadExchangeStreamCaptureMode(&m);
  EXPECT_EQ(cuMemAlloc_v2(&p, 64), CUDA_SUCCESS);
  cuThreadExchangeStreamCaptureMode(&m);
  EXPECT_EQ(m, CU_STREAM_CAPTURE_MODE_RELAXED);
  EXPECT_EQ(cuStreamEndCapture(st.s, &g), CUDA_SUCCESS);
  cuGraphDestroy(g);
  cuMemFree_v2(p);
}

TEST(FakeCapture, TheLegacyStreamIsImplicitlyCapturedWhileABlockingStreamCaptures) {
  Streams st;
  ASSERT_EQ(cuStreamBeginCapture_v2(st.s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CUstreamCaptureStatus status;
  EXPECT_EQ(cuStreamIsCapturing(nullptr, &status), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  EXPECT_EQ(cuStreamIsCapturing(st.other, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
  CUgraph g = nullptr;
  EXPECT_EQ(cuStreamEndCapture(st.s, &g), CUDA_SUCCESS) << "asking does not invalidate the capture";
  cuGraphDestroy(g);
}

TEST(FakeCapture, AStreamThatWaitsOnACapturedEventJoinsAndMustBeJoinedBack) {
  Streams st;
  CUevent e, back;
  cuEventCreate(&e, 0);
  cuEventCreate(&back, 0);
  // What edo's device counting did inside a capture: record on the job's stream, wait on it
  // from its own stream, copy there.
  ASSERT_EQ(cuStreamBeginCapture_v2(st.s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(e, st.s), CUDA_SUCCESS);
  EXPECT_EQ(cuEventQuery(e), CUDA_ERROR_CAPTURED_EVENT);
  ASSERT_EQ(cuStreamWaitEvent(st.other, e, 0), CUDA_SUCCESS);
  CUstreamCaptureStatus status;
  cuStreamIsCapturing(st.other, &status);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE) << "the waiting stream joined the capture";
  CUgraph g = nullptr;
  EXPECT_EQ(cuStreamEndCapture(st.s, &g), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
  // Joined back: the origin waits on an event recorded on the forked stream.
  ASSERT_EQ(cuStreamBeginCapture_v2(st.s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  cuEventRecord(e, st.s);
  cuStreamWaitEvent(st.other, e, 0);
  cuEventRecord(back, st.other);
  cuStreamWaitEvent(st.s, back, 0);
  EXPECT_EQ(cuStreamEndCapture(st.s, &g), CUDA_SUCCESS);
  cuGraphDestroy(g);
  // A capturing stream may not wait on an event recorded outside its capture.
  cuEventRecord(back, st.other);
  ASSERT_EQ(cuStreamBeginCapture_v2(st.s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamWaitEvent(st.s, back, 0), CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
  EXPECT_EQ(cuStreamEndCapture(st.s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  cuEventDestroy_v2(e);
  cuEventDestroy_v2(back);
}

TEST(FakeCapture, ACapturedLaunchRunsOnlyWhenTheGraphIsLaunched) {
  Streams st;
  fake_kernel* k = fake_cuda_kernel("bump", bump, nullptr, nullptr, 0);
  runs = 0;
  ASSERT_EQ(cuStreamBeginCapture_v2(st.s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchKernel(reinterpret_cast<CUfunction>(k), 1, 1, 1, 1, 1, 1, 0, st.s, nullptr, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(runs, 0);
  CUgraph g = nullptr;
  ASSERT_EQ(cuStreamEndCapture(st.s, &g), CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, g, 0), CUDA_SUCCESS);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(cuGraphLaunch(exec, st.s), CUDA_SUCCESS);
  EXPECT_EQ(runs, 3);
  cuGraphExecDestroy(exec);
  cuGraphDestroy(g);
}
