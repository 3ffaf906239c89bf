// Iterative wildcard matching: on a mismatch, backtrack only to the most recent `*`. Earlier stars
// never need revisiting because the latest star can absorb whatever they would have.
#include "framework/optim/glob.h"

namespace gattn::optim {

bool glob_match(const std::string& pattern, const std::string& name) {
  const std::size_t np = pattern.size(), nn = name.size();
  std::size_t p = 0, n = 0;
  std::size_t star = std::string::npos;  // position just after the last `*` seen in the pattern
  std::size_t star_n = 0;                // where in name that star's run currently ends
  while (n < nn) {
    if (p < np && (pattern[p] == '?' || (pattern[p] != '*' && pattern[p] == name[n]))) {
      ++p;
      ++n;
    } else if (p < np && pattern[p] == '*') {
      star = ++p;  // the star first matches the empty run
      star_n = n;
    } else if (star != std::string::npos) {
      p = star;  // let the last star swallow one more character and retry
      n = ++star_n;
    } else {
      return false;
    }
  }
  while (p < np && pattern[p] == '*') ++p;  // trailing stars match the empty run
  return p == np;
}

}  // namespace gattn::optim
