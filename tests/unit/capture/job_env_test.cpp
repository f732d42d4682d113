// job_environment(): what the library adds to its process's environment so that a job started
// with LD_PRELOAD and EDO_OUTPUT alone records what `edo record` would.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "job_env.h"

using namespace edo::capture;

namespace {

using Env = std::map<std::string, std::string>;

Env apply(const Env& env, std::vector<std::string>* warnings = nullptr, bool has_hook = true) {
  JobEnvInputs in;
  in.lib_path = "/opt/edo/lib/libedo_trace.so";
  in.pid = 4242;
  in.get = [&env](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  in.is_dir = [has_hook](const std::string& p) { return has_hook && p == "/opt/edo/lib/python/edo_boot"; };
  in.is_readable = [](const std::string& p) { return p == "/opt/edo/lib/libedo_trace.so" || p == "/other/libedo_trace.so"; };
  Env out = env;
  for (const auto& [k, v] : job_environment(in, warnings)) out[k] = v;
  return out;
}

}  // namespace

TEST(JobEnvironment, AnEmptyEnvironmentGetsTheHookTheLibraryAndNvtx) {
  Env e = apply({});
  EXPECT_EQ(e["PYTHONPATH"], "/opt/edo/lib/python/edo_boot:/opt/edo/lib/python");
  EXPECT_EQ(e["EDO_TRACE_LIB"], "/opt/edo/lib/libedo_trace.so");
  EXPECT_EQ(e["NVTX_INJECTION64_PATH"], "/opt/edo/lib/libedo_trace.so");
  EXPECT_EQ(e["EDO_ROOT_PID"], "4242");
}

TEST(JobEnvironment, TheJobsOwnValuesAreKept) {
  Env e = apply({{"PYTHONPATH", "/home/me/src"}, {"NVTX_INJECTION64_PATH", "/nsight/libinj.so"},
                 {"EDO_TRACE_LIB", "/other/libedo_trace.so"}, {"EDO_ROOT_PID", "17"}});
  EXPECT_EQ(e["EDO_ROOT_PID"], "17");
  EXPECT_EQ(e["PYTHONPATH"], "/opt/edo/lib/python/edo_boot:/opt/edo/lib/python:/home/me/src");
  EXPECT_EQ(e["NVTX_INJECTION64_PATH"], "/nsight/libinj.so");
  EXPECT_EQ(e["EDO_TRACE_LIB"], "/other/libedo_trace.so");
}

// A child of a traced process inherits the variables: nothing is added twice.
TEST(JobEnvironment, AppliedTwiceChangesNothing) {
  Env once = apply({{"PYTHONPATH", "/home/me/src"}});
  EXPECT_EQ(apply(once), once);
}

TEST(JobEnvironment, TorchHookOffOrMissingLeavesPythonPathAlone) {
  for (const char* off : {"0", "off", "False", "no"}) {
    Env e = apply({{"EDO_TORCH", off}, {"PYTHONPATH", "/x"}});
    EXPECT_EQ(e["PYTHONPATH"], "/x") << off;
  }
  Env e = apply({}, nullptr, /*has_hook=*/false);
  EXPECT_EQ(e.count("PYTHONPATH"), 0u);
  EXPECT_EQ(e["EDO_TRACE_LIB"], "/opt/edo/lib/libedo_trace.so");
}

TEST(JobEnvironment, AnEdoTraceLibThatIsNoFileIsReplacedWithAWarning) {
  std::vector<std::string> w;
  Env e = apply({{"EDO_TRACE_LIB", "/nonexistent/lib.so"}}, &w);
  EXPECT_EQ(e["EDO_TRACE_LIB"], "/opt/edo/lib/libedo_trace.so");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0], "edo: ignoring EDO_TRACE_LIB='/nonexistent/lib.so' (no readable file there); using the default "
                  "/opt/edo/lib/libedo_trace.so");
}
