// Orderly shutdown of the binaries: SIGINT/SIGTERM are blocked in the calling thread and every
// thread it starts afterwards, so that only WaitForStopSignal() receives them.
#pragma once

#include <signal.h>

namespace yuebing {

// Call first in main(), before any thread starts. Returns the set to wait on.
inline sigset_t BlockStopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

// Blocks until SIGINT or SIGTERM arrives; returns the signal number.
inline int WaitForStopSignal(const sigset_t& signals) {
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  return signal_number;
}

}  // namespace yuebing
