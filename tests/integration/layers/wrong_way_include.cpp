// Added to core's edo_stats only when the project is configured with
// EDO_LAYERING_SELFTEST_INCLUDE=ON (tests/integration/layers): core must not include db, and
// the configure-time check (cmake/EdoLayers.cmake) must refuse it. Never compiled.
#include "../../../db/include/edo/db/profile_store.h"
