// CPU lists for posewire-load's --cpus: which CPUs the generator's network
// phase may run on.
//
// On a machine the generator shares with the server, a generator free to
// run anywhere keeps landing on the core where the server's thread was
// about to be woken, and every such wake-up crosses cores (an
// inter-processor interrupt; in a virtual machine, an exit to the host).
// Confining the generator to its own CPUs keeps it from preempting what it
// measures; docs/PERFORMANCE.md has the figures.
#ifndef POSEWIRE_CLIENTS_LOAD_CPU_LIST_H_
#define POSEWIRE_CLIENTS_LOAD_CPU_LIST_H_

#include <sched.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace posewire::load {

// Parses a list such as "1", "0,2" or "2-3,6": CPU numbers and inclusive
// ranges, comma-separated, as taskset -c and cgroup cpusets write them.
// Every CPU must be in `available`; an empty list is an error.
absl::StatusOr<cpu_set_t> ParseCpuList(absl::string_view list,
                                       const cpu_set_t& available);

// The inverse: "0-1,3" for CPUs 0, 1 and 3 ("" for none).
std::string FormatCpuList(const cpu_set_t& cpus);

// The CPUs the calling thread may run on.
absl::StatusOr<cpu_set_t> ThreadAffinity();

// Confines the calling thread to `cpus`. Threads it starts afterwards
// (gRPC's among them) inherit the set and keep it.
absl::Status SetThreadAffinity(const cpu_set_t& cpus);

}  // namespace posewire::load

#endif  // POSEWIRE_CLIENTS_LOAD_CPU_LIST_H_
