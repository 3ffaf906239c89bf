// The handlers only touch a sig_atomic_t and call async-signal-safe functions (write, _exit, and the
// openat/getdents64/unlinkat of remove_staging_directories_on_signal).
#include "recipes/common/stop_signal.h"

#include <unistd.h>

#include "framework/io/staged_directory.h"

namespace gattn::recipes {

namespace {

volatile std::sig_atomic_t g_received = 0;

constexpr int kSignals[] = {SIGINT, SIGTERM};
struct sigaction g_previous[2];
bool g_installed[2] = {false, false};

extern "C" void on_stop_signal(int signo) {
  if (g_received != 0) {
    static const char msg[] = "\ngattn: second signal, exiting now (the last complete checkpoint is intact)\n";
    (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(128 + signo);
  }
  g_received = signo;
}

extern "C" void exit_on_signal(int signo) {
  // A command stopped halfway leaves no .OUT.partial-PID behind (tokenize's staged output).
  remove_staging_directories_on_signal();
  static const char int_msg[] = "gattn: stopped by SIGINT\n";
  static const char term_msg[] = "gattn: stopped by SIGTERM\n";
  if (signo == SIGINT)
    (void)!::write(STDERR_FILENO, int_msg, sizeof int_msg - 1);
  else
    (void)!::write(STDERR_FILENO, term_msg, sizeof term_msg - 1);
  ::_exit(128 + signo);
}

}  // namespace

void install_exit_on_signal() {
  for (int signo : kSignals) {
    struct sigaction current;
    if (::sigaction(signo, nullptr, &current) != 0 || current.sa_handler == SIG_IGN) continue;
    struct sigaction sa {};
    sa.sa_handler = exit_on_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(signo, &sa, nullptr);
  }
}

StopSignals::StopSignals() {
  g_received = 0;
  for (int i = 0; i < 2; ++i) {
    struct sigaction current;
    if (::sigaction(kSignals[i], nullptr, &current) != 0 || current.sa_handler == SIG_IGN) continue;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;  // a signal must not fail the read or write it interrupts
    g_installed[i] = ::sigaction(kSignals[i], &sa, &g_previous[i]) == 0;
  }
}

StopSignals::~StopSignals() {
  // After a first signal the process is on its way out: keep the handler, so a second signal in
  // that window still exits with the message and 128 + signal instead of a bare signal death.
  if (g_received != 0) return;
  for (int i = 0; i < 2; ++i)
    if (g_installed[i]) {
      ::sigaction(kSignals[i], &g_previous[i], nullptr);
      g_installed[i] = false;
    }
}

int StopSignals::received() { return static_cast<int>(g_received); }

std::string signal_name(int signo) {
  if (signo == SIGINT) return "SIGINT";
  if (signo == SIGTERM) return "SIGTERM";
  return "signal " + std::to_string(signo);
}

}  // namespace gattn::recipes
