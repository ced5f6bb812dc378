// quantkit::Error — the one exception type the library throws.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace quantkit {

// Thrown for bad input: the message names the tensor/node/option, what was found
// and what was expected, e.g.
//   quantkit: tensor 'conv1.weight': found NaN at index 17; expected finite values
class Error : public std::invalid_argument {
 public:
  explicit Error(const std::string& message) : std::invalid_argument("quantkit: " + message) {}
};

namespace detail {

template <class... Parts>
[[noreturn]] void fail(Parts&&... parts) {
  std::ostringstream out;
  (out << ... << std::forward<Parts>(parts));
  throw Error(out.str());
}

// "tensor 'name'" or "tensor" when unnamed: every message starts with what it is about.
inline std::string describe_tensor(const std::string& name) {
  return name.empty() ? std::string("tensor") : "tensor '" + name + "'";
}

}  // namespace detail
}  // namespace quantkit
