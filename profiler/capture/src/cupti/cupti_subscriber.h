// The CUPTI side of the CUDA capture (cupti_subscriber.cpp) as the device staging sees it.
#pragma once

namespace edo::capture {

// False in a forked child of a CUDA process: CUDA cannot be used there.
bool cuda_usable();
// Registers (once) the exit handler that collects device copies in flight and CUPTI's
// buffered records while the CUDA context is still alive.
void register_late_exit();
// fork() (cupti_state.h): the attach lock is taken across it; a child attaches no more and
// gets a new CuptiRun (the parent's is abandoned there).
void cupti_before_fork();
void cupti_after_fork_parent();
void cupti_after_fork_child();

}  // namespace edo::capture
