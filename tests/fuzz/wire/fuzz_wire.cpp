// Fuzz target: bytes from a traced process (or an EDO_OUTPUT file), through everything the
// collector does with them: the frame decoder, the frame -> profile builder (fed in uneven
// chunks, as a socket delivers them), the summaries `edo record` prints and the database save
// (in memory, for one input in eight). Corrupt input must be reported and skipped, never
// crash, leak, hang or make the collector allocate far beyond what the input carries.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "edo/collector/collector.h"
#include "edo/db/profile_store.h"
#include "edo/model/profile_summary.h"
#include "edo/wire/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The decoder alone, whole input at once.
  {
    edo::wire::StreamDecoder dec;
    dec.feed(data, size);
    edo::wire::Message m;
    for (int guard = 0; guard < 1'000'000; ++guard) {
      const auto r = dec.next(m);
      if (r.status == edo::wire::StreamDecoder::Status::kNeedMore) break;
    }
  }
  // The collector: chunk sizes follow the input's checksum, so each input replays exactly.
  edo::collector::ProfileBuilder builder("fuzz");
  const int stream = builder.open_stream("fuzz");
  uint32_t h = edo::wire::crc32(data, size);
  for (size_t i = 0; i < size;) {
    h = h * 1103515245u + 12345u;
    const size_t n = std::min(size - i, size_t(1 + (h >> 16) % 700));
    builder.feed(stream, data + i, n);
    i += n;
  }
  builder.close_stream(stream);
  builder.set_exit_code(1, 0);
  edo::model::Profile& profile = builder.finish();
  (void)edo::collector::summary_lines(profile);
  (void)edo::model::table_views(profile);
  // The save is the slow part (a fresh in-memory database): one input in eight, chosen by
  // its checksum, goes that far.
  if (builder.frames() > 0 && (h & 0x70000) == 0) {
    try {
      edo::db::ProfileStore store = edo::db::ProfileStore::in_memory();
      store.save(profile, true);
      (void)store.load();
    } catch (const edo::db::DbError& e) {
      // A profile the database refuses is one line for the user, unless the collector built
      // something inconsistent (duplicate or missing session ids): that is a bug here.
      if (std::string(e.what()).find("internal error") != std::string::npos) std::abort();
    }
  }
  return 0;
}
