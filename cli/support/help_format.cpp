#include "support/help_format.h"

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace edo::cli {

namespace {

// 1099511627776 -> "2^40"; other numbers as written.
std::string readable_number(const std::string& s) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (*end == '\0' && v >= (1ull << 20) && (v & (v - 1)) == 0) {
    int k = 0;
    while ((1ull << k) != v) ++k;
    return "2^" + std::to_string(k);
  }
  return s;
}

std::vector<std::string> split_validators(const std::string& s) {
  // ':' separates the type from each validator's text; a set "{a,b}" holds no ':'.
  std::vector<std::string> parts;
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '{' || s[i] == '[') ++depth;
    if (s[i] == '}' || s[i] == ']') --depth;
    if (s[i] == ':' && depth == 0) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(s.substr(start));
  return parts;
}

// CLI11's Range validator text, "<TYPE> in [<lo> - <hi>]" (CLI/Validators.hpp, Range): true and
// the two limits when `v` is one. Parsed by hand: <regex> alone cost this file 10 s of compiling.
bool range_limits(const std::string& v, std::string& lo, std::string& hi) {
  size_t i = 0;
  while (i < v.size() && (std::isalnum(static_cast<unsigned char>(v[i])) || v[i] == '_')) ++i;
  if (i == 0 || v.size() < i + 6 || v.compare(i, 5, " in [") != 0 || v.back() != ']') return false;
  const std::string inner = v.substr(i + 5, v.size() - i - 6);
  const size_t dash = inner.rfind(" - ");  // the last one: a limit may be negative ("-5 - 10")
  if (dash == std::string::npos) return false;
  lo = inner.substr(0, dash);
  hi = inner.substr(dash + 3);
  return true;
}

}  // namespace

std::string readable_type(const std::string& cli11_type, const std::string& default_value) {
  const std::vector<std::string> parts = split_validators(cli11_type);
  std::string type = parts[0];
  if (type == "UINT" || type == "INT") type = "N";
  else if (type == "FLOAT") type = "X";
  std::string limits;
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string& v = parts[i];
    std::string lo, hi;
    if (range_limits(v, lo, hi)) limits = "[" + readable_number(lo) + ".." + readable_number(hi) + "]";
    else if (!v.empty() && v.front() == '{') type = v;  // a set of names says more than TEXT
    else if (v == "POSITIVE") limits = ">0";
    else if (v == "NONNEGATIVE") limits = ">=0";
    else if (!v.empty()) limits = v;
  }
  std::string out = type;
  if (!default_value.empty()) out += "=" + default_value;
  if (!limits.empty()) out += " " + limits;
  return out;
}

std::string HelpFormatter::make_option_opts(const CLI::Option* opt) const {
  if (!opt->get_option_text().empty() || opt->get_type_size() == 0) return CLI::Formatter::make_option_opts(opt);
  const std::string type = readable_type(opt->get_type_name(), opt->get_default_str());
  std::string out = type.empty() ? std::string() : " " + type;
  if (opt->get_expected_max() == CLI::detail::expected_max_vector_size) out += " ...";
  if (opt->get_required()) out += " " + get_label("REQUIRED");
  for (const CLI::Option* other : opt->get_excludes()) out += " (not with " + other->get_name() + ")";
  return out;
}

}  // namespace edo::cli
