// Whether ops record autograd history on this thread; NoGradGuard turns it off for a scope.
#pragma once

namespace gattn::autograd {

bool grad_enabled();
void set_grad_enabled(bool on);

class NoGradGuard {
 public:
  NoGradGuard() : previous_(grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace gattn::autograd

namespace gattn {
using autograd::NoGradGuard;
}
