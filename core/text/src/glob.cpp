// Shell-style globs over table names (edo/text/glob.h): `*`, `?` and `[...]` sets.
#include <string>

#include "edo/text/glob.h"

namespace edo {
namespace {

// Matches [set] at p (p points after '['); returns the position after ']' or npos when the
// set is not closed (then '[' is an ordinary character).
size_t match_set(const std::string& pat, size_t p, char c, bool& hit) {
  bool negate = false;
  if (p < pat.size() && (pat[p] == '!' || pat[p] == '^')) {
    negate = true;
    ++p;
  }
  bool any = false;
  const size_t start = p;
  while (p < pat.size() && (pat[p] != ']' || p == start)) {
    if (p + 2 < pat.size() && pat[p + 1] == '-' && pat[p + 2] != ']') {
      any = any || (c >= pat[p] && c <= pat[p + 2]);
      p += 3;
    } else {
      any = any || c == pat[p];
      ++p;
    }
  }
  if (p >= pat.size()) return std::string::npos;
  hit = any != negate;
  return p + 1;
}

}  // namespace

// Iterative matching with one backtrack point for the last '*' (linear in practice, no
// recursion: a hostile pattern cannot blow the stack).
bool glob_match(const std::string& pat, const std::string& s) {
  size_t p = 0, i = 0, star_p = std::string::npos, star_i = 0;
  while (i < s.size()) {
    if (p < pat.size() && pat[p] == '*') {
      star_p = ++p;
      star_i = i;
      continue;
    }
    if (p < pat.size()) {
      if (pat[p] == '?') {
        ++p;
        ++i;
        continue;
      }
      if (pat[p] == '[') {
        bool hit = false;
        const size_t next = match_set(pat, p + 1, s[i], hit);
        if (next != std::string::npos) {
          if (hit) {
            p = next;
            ++i;
            continue;
          }
        } else if (s[i] == '[') {
          ++p;
          ++i;
          continue;
        }
      } else if (pat[p] == s[i]) {
        ++p;
        ++i;
        continue;
      }
    }
    if (star_p == std::string::npos) return false;
    p = star_p;
    i = ++star_i;
  }
  while (p < pat.size() && pat[p] == '*') ++p;
  return p == pat.size();
}

}  // namespace edo
