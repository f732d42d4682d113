// `edo export --format vocab-remap` (issue 33 point 6): a token table's id remap for the
// "trim vocabulary" change, as a JSON file a tokenizer or data loader applies (docs/formats.md
// "vocab-remap"). Read from the recording itself (no plan needed): the ids that cover the
// target share of the first 70 % of the table's lookups, scored on the rest.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace edo::cli {

// The format name, the first key of every such file: how `-o` recognises one.
inline constexpr const char* kVocabRemapFormat = "edo.vocab_remap/1";

struct VocabRemapRequest {
  std::string file;                  // the .edodb
  std::string table;                 // "" : the recording's only token table
  std::string coverage = "99.9";     // "99", "99.9" or "99.99" (percent)
  std::optional<uint64_t> unk;       // old id every dropped id maps to (default: the first kept id)
};

// The file's text; throws Failure with one line naming the problem and the fix.
std::string vocab_remap_text(const VocabRemapRequest& r);

// Whether `path` holds a file this export wrote (so that --force may replace it).
bool is_vocab_remap_file(const std::string& path);

}  // namespace edo::cli
