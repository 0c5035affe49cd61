// posewire-load's senders over the wire: Session streams and unary
// callers as gRPC callback-API reactors (not threads), so the generator's
// own CPU use stays small and flat however many streams it drives.
#ifndef POSEWIRE_CLIENTS_LOAD_NETWORK_SENDERS_H_
#define POSEWIRE_CLIENTS_LOAD_NETWORK_SENDERS_H_

#include <grpcpp/generic/generic_stub.h>

#include <memory>
#include <vector>

#include "clients/load/phase.h"
#include "posewire/v1/posewire.grpc.pb.h"

namespace posewire::load {

// One stub of each kind per channel: typed for Solve, generic (bytes) for
// Session.
struct ChannelStubs {
  std::unique_ptr<v1::PoseWire::Stub> typed;
  std::unique_ptr<grpc::GenericStub> generic;
};

// Drives the phase's senders over `stubs` (sender i on stub i mod size)
// until the phase ends; sender i's counts go to results[i].
void RunNetwork(const Phase& phase, std::vector<ChannelStubs>& stubs,
                std::vector<SenderResult>& results);

}  // namespace posewire::load

#endif  // POSEWIRE_CLIENTS_LOAD_NETWORK_SENDERS_H_
