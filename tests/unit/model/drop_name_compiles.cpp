// Compiled (not run) by two tests in this folder's CMakeLists.txt: with a counter of the catalog
// it must build; with EDO_UNKNOWN_DROP defined it must fail, naming the catalog, because a
// drops::Name is made only at compile time from a name the catalog declares.
#include "edo/drops/catalog.h"

namespace {
void count_drop(edo::drops::Name, unsigned long) {}
}  // namespace

int main() {
#ifdef EDO_UNKNOWN_DROP
  count_drop("batchez", 1);
#else
  count_drop("batches", 1);
#endif
  return 0;
}
