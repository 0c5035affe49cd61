// posewire-load's in-process baseline: the same senders and requests
// without gRPC, answered by the service logic (server::Solve,
// server::Session::Handle) on as many threads as the server has solver
// threads.
#ifndef POSEWIRE_CLIENTS_LOAD_LOCAL_SENDERS_H_
#define POSEWIRE_CLIENTS_LOAD_LOCAL_SENDERS_H_

#include <vector>

#include "clients/load/phase.h"

namespace posewire::load {

// Drives the phase's senders in process on `threads` threads until the
// phase ends; sender i's counts go to results[i].
void RunInProcess(const Phase& phase, int threads,
                  std::vector<SenderResult>& results);

}  // namespace posewire::load

#endif  // POSEWIRE_CLIENTS_LOAD_LOCAL_SENDERS_H_
