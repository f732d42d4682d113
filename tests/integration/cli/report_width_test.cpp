// `edo report` fits the terminal (issue 18 §7): its lines were 192-356 characters whatever the
// width. COLUMNS (or the terminal, or 100 when stdout is not one) bounds every line; --wide
// keeps one line per table; long names are abbreviated in the middle, notes wrapped at spaces.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "edo/db/profile_store.h"
#include "run_command.h"
#include "support/terminal.h"
#include "support/text_width.h"

namespace {

using edo::testing::run_command;
namespace model = edo::model;

std::string temp_db(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("edo-width-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir / name);
  return (dir / name).string();
}

const std::string kLongName =
    "model.sparse_arch.embedding_bag_collection.embedding_bags.t_cat_user_history_of_items_clicked_last_30_days.weight";

model::Table table(const std::string& name, uint64_t rows, uint32_t dim, std::vector<int64_t> reads, uint64_t base) {
  model::Table t;
  t.session_id = 1;
  t.name = name;
  t.rows = rows;
  t.dim = dim;
  t.dtype = "fp32";
  t.device = "cuda:0";
  t.base_address = base;
  t.weight_bytes = rows * dim * 4;
  t.optimizer_bytes = 2 * t.weight_bytes;  // Adam: all four memory columns are shown
  t.grad_bytes = t.weight_bytes;
  edo::stats::TableIngestor ing(rows, edo::stats::StatsConfig{});
  ing.add(reads.data(), reads.size());
  t.aggregate = ing.take_delta();
  return t;
}

// Widest case: split memory columns, a 112-character name, a tie with a long name.
std::string wide_db() {
  const std::string db = temp_db("wide.edodb");
  model::Profile p;
  model::Session s;
  s.id = 1;
  s.command = "python3 train_recommender.py --config configs/dlrm_criteo_terabyte_with_a_long_path.yaml --epochs 3 --lr 0.01";
  s.pid = 100;
  s.host = "box";
  s.source = "record";
  s.exit_code = 0;
  p.sessions.push_back(s);
  std::vector<int64_t> reads;
  for (int64_t i = 0; i < 5000; ++i) reads.push_back((i * i) % 977);
  p.tables.push_back(table(kLongName, 1000000, 128, reads, 0x10000));
  p.tables.push_back(table("model.decoder.lm_head_tied_to_the_input_embedding_table", 1000000, 128, {}, 0x10000));
  p.tables.push_back(table("item", 5000, 16, reads, 0x90000000));
  p.ties.push_back({1, kLongName, "model.decoder.lm_head_tied_to_the_input_embedding_table"});
  edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kCreate).save(p);
  return db;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

size_t widest(const std::string& text) {
  size_t w = 0;
  for (const auto& l : lines_of(text)) w = std::max(w, edo::cli::display_width(l));
  return w;
}

TEST(ReportWidth, EveryLineFitsColumns) {
  const std::string db = wide_db();
  for (int columns : {100, 80, 132}) {
    auto r = run_command("COLUMNS=" + std::to_string(columns) + " " EDO_BIN " report '" + db + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_LE(widest(r.out), size_t(columns)) << r.out;
    // Nothing lost: every table, the ties and the LRU figures are there.
    for (const char* needle : {"item", "(tied)", "LRU50%", "lm_head_tied_to", "BYTES = WEIGHTS + OPTIMIZER + GRADS"})
      EXPECT_NE(r.out.find(needle), std::string::npos) << columns << ": " << needle << "\n" << r.out;
    EXPECT_NE(r.out.find("model.sparse_arch.embedding_bag_collection"), std::string::npos) << r.out;  // its start
    EXPECT_NE(r.out.find("last_30_days.weight"), std::string::npos) << r.out;                       // and its end
  }
}

TEST(ReportWidth, NotATerminalMeans100Columns) {
  const std::string db = wide_db();
  auto r = run_command("env -u COLUMNS " EDO_BIN " report '" + db + "' | cat");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LE(widest(r.out), 100u) << r.out;
  EXPECT_GT(widest(r.out), 60u) << r.out;
}

TEST(ReportWidth, WideKeepsOneLinePerTableAndWholeNames) {
  const std::string db = wide_db();
  auto r = run_command("COLUMNS=80 " EDO_BIN " report --wide '" + db + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(widest(r.out), 150u);
  EXPECT_NE(r.out.find(kLongName), std::string::npos) << r.out;
  bool item_line = false;
  for (const auto& l : lines_of(r.out))
    if (l.rfind("item ", 0) == 0) {
      item_line = true;
      EXPECT_NE(l.find("5000 x 16"), std::string::npos) << l;
      EXPECT_NE(l.find('%'), std::string::npos) << l;  // its statistics on the same line
    }
  EXPECT_TRUE(item_line) << r.out;
}

TEST(ReportWidth, AbbreviateAndWrap) {
  using edo::cli::abbreviate_middle;
  using edo::cli::wrap_words;
  EXPECT_EQ(abbreviate_middle("short", 10), "short");
  EXPECT_EQ(abbreviate_middle("model.embeddings.word_embeddings", 20), "model.emb...beddings");
  EXPECT_EQ(edo::cli::display_width(abbreviate_middle(kLongName, 37)), 37u);
  EXPECT_EQ(abbreviate_middle("\xc3\xa9t\xc3\xa9_tr\xc3\xa8s_long_nom", 9), "\xc3\xa9t\xc3\xa9...nom");
  EXPECT_EQ(wrap_words("one two three four", 9, "  "), "one two\n  three\n  four");
  EXPECT_EQ(wrap_words("  kept   as is", 40), "  kept   as is");
  EXPECT_EQ(wrap_words("  lead words here", 10, "    "), "  lead\n    words\n    here");
  EXPECT_EQ(wrap_words("abcdefghijkl", 5), "abcde\nfghij\nkl");
}

}  // namespace
