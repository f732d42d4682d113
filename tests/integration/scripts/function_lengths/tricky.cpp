// Each function's expected length is in its name (lines from its name to its closing brace).
#include <string>
#define BRACE_MACRO(x) { x }
namespace outer { namespace {

const char* kText = "} not a brace { \" }";
const char kOpen = '{';
constexpr long kBig = 1'000'000;
const int kTable[] = {1, 2, {3}};

int five(int a) {
  // } a brace in a comment
  /* { another } */
  return a + 1;
}

}  // namespace

struct Holder {
  int value_;
  std::string name_;
  Holder(int v, std::string n) : value_{v}, name_(n) {
    value_ += 1;
  }
  int three() const {
    return value_;
  }
  bool operator()(int x) const noexcept { return x == value_; }
};

template <class T>
auto eight(T t) -> decltype(t + 1) {
  auto lambda = [&](int x) {
    if (x) { return x; }
    return 0;
  };
  const std::string raw = R"edo( } { )" )edo";
  return t + lambda(1) + static_cast<int>(raw.size());
}

extern "C" {
int four(void)
{
  return kBig > 0;
}
}

auto not_a_function = [](int x) {
  return x;
};

enum class Colour { red, green };

}  // namespace outer
