// One symbol of a dlopen()ed library into a typed function pointer (null when it is absent):
// the CUDA driver and CUPTI are loaded at run time, never linked (docs/architecture.md).
#pragma once

#include <dlfcn.h>

namespace edo::capture {

template <class T>
void load_symbol(void* handle, T& f, const char* name) {
  f = reinterpret_cast<T>(dlsym(handle, name));
}

}  // namespace edo::capture
