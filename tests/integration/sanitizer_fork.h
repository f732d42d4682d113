// Tests that fork() while another thread of the process allocates: skipped in GCC's
// AddressSanitizer build, where the sanitizer runtime itself can hang the child.
//
// GCC 12's libasan (the Debian 12 toolchain of `make test SANITIZE=address,undefined`) does not
// take its allocator's locks around fork(): a child forked while another thread is inside
// malloc can wait forever on a lock that no thread of the child will release, with or without
// edo. compiler-rt fixed it with llvm/llvm-project#75290 ("[asan] Install `pthread_atfork`",
// 2023-12: "prevents deadlocks in forked process if parent had more than one running thread").
// glibc's malloc is fork-safe, so these tests run in the normal build, which is where they test
// edo's own fork handling (its locks taken across fork, the child's fresh state).
#pragma once

#include <gtest/gtest.h>

#if defined(__SANITIZE_ADDRESS__) && !defined(__clang__)
#define EDO_SKIP_FORK_WITH_THREADS_UNDER_ASAN()                                                        \
  GTEST_SKIP() << "GCC's AddressSanitizer runtime can hang a child forked while another thread "      \
                  "allocates (libasan has no pthread_atfork before llvm/llvm-project#75290); this " \
                  "test runs in the normal build"
#else
#define EDO_SKIP_FORK_WITH_THREADS_UNDER_ASAN() (void)0
#endif
