// `edo ... --help` in words a user reads: CLI11 prints an option's type with its validators
// ("--rows UINT:UINT in [1 - 1099511627776]=1000000"); edo prints "--rows N=1000000 [1..2^40]".
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace edo::cli {

class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_opts(const CLI::Option* opt) const override;
};

// CLI11's type-and-validator text rewritten: "UINT:UINT in [1 - 65536]" -> "N [1..65536]",
// "TEXT:{fp32,fp16}" -> "{fp32,fp16}", "FLOAT:POSITIVE" -> "X >0". Exposed for tests.
std::string readable_type(const std::string& cli11_type, const std::string& default_value);

}  // namespace edo::cli
