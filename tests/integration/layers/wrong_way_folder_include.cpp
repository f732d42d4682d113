// Read as if it lay in tuner/src/measure/ when the project is configured with
// EDO_LAYERING_SELFTEST_INCLUDE=ON (tests/integration/layers): io/ is above measure/ in the
// tuner's declared folder order (tuner/CMakeLists.txt), so the configure-time check
// (cmake/EdoFolderOrder.cmake) must refuse this include. Never compiled.
#include "../../../tuner/src/io/text.h"
