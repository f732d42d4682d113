// Where libcupti is looked for (cupti_subscriber.cpp loads it). PyTorch maps its libcudart
// before its libcupti (Kineto), and pip-installed CUDA keeps each library in its own folder
// (site-packages/nvidia/<part>/lib): a bare dlopen("libcupti.so.13") would miss that copy, or
// load a second one that does not know about the first one's subscriber. So, in order:
//   EDO_CUPTI_PATH; a libcupti already mapped; the folder of the mapped libcudart and its pip
//   sibling ../../cuda_cupti/lib; torch/lib beside a mapped libtorch*; the build-time default
//   (the toolkit's); the plain sonames (the loader's search path).
#pragma once

#include <string>
#include <vector>

namespace edo::capture {

// The file of a libcupti already mapped into the process ("" when none).
std::string mapped_cupti();
// Candidate paths or sonames, best first (see above); `explicit_path`: EDO_CUPTI_PATH.
std::vector<std::string> cupti_candidates(const std::string& explicit_path, const std::string& build_default);

}  // namespace edo::capture
