// Added to cli's edo_cli_app only when the project is configured with
// EDO_LAYERING_SELFTEST_INCLUDE=ON (tests/integration/layers): the tracer's src/ is its own,
// so the configure-time check (cmake/EdoLayers.cmake) must refuse this include. Never compiled.
#include "../../../profiler/capture/src/events.h"
