// Shared by every posewire binary (posewire-server, posewire, posewire-load),
// both sides of the contract: the front door a user meets first.
//
//   --help     what the program does, its own flags with their meanings and
//              defaults, and its exit codes; on standard output, exit 0
//   --version  "NAME VERSION (revision REV)", exit 0
//   --helpfull every flag, Abseil's and gRPC's too (Abseil prints it and
//              exits 1), under source paths relative to the source tree
//
// and the HOST:PORT check every address flag goes through, so that no
// binary silently picks a port the user never wrote (gRPC otherwise takes
// 443 to listen on and 0 to connect to).
#ifndef POSEWIRE_PROTO_PROGRAM_H_
#define POSEWIRE_PROTO_PROGRAM_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace posewire {

struct Program {
  // As users type it: "posewire-server".
  absl::string_view name;
  // What the program does and how to call it: --help's first lines, without
  // the flags.
  absl::string_view usage;
  // The source folder whose flags are this program's own, relative to the
  // source tree ("server/transport/"); --help lists only those.
  absl::string_view flags_folder;
  // --help's last lines: each exit code and what it means.
  absl::string_view exit_codes;
};

// absl::ParseCommandLine with the front door above; returns the positional
// arguments (argv[0] first). An unknown flag or a bad flag value is
// reported by Abseil, which exits 1.
std::vector<char*> ParseProgramFlags(int argc, char** argv,
                                     const Program& program);

// What --help prints: usage, the program's own flags (name, default and
// meaning, sorted by name), exit codes.
std::string ProgramHelp(const Program& program);

// "posewire-server 0.1.0 (revision 0123456789ab)".
std::string VersionLine(absl::string_view program_name);

// Whether `address` may be 0 for "any free port": true for addresses a
// server listens on, false for addresses a client connects to.
enum class PortZero { kAllowed, kRefused };

// Checks that an address flag is HOST:PORT ([V6ADDR]:PORT for IPv6) with an
// explicit port in [1, 65535] (or 0 when allowed). unix:PATH and
// unix-abstract:NAME pass as they are: gRPC takes them without a port.
// INVALID_ARGUMENT names `flag` and says what to write instead.
absl::Status CheckHostPort(absl::string_view flag, absl::string_view address,
                           PortZero port_zero);

// The HOST of a HOST:PORT that passed CheckHostPort (brackets of an IPv6
// address removed), and its PORT.
absl::string_view AddressHost(absl::string_view address);
absl::string_view AddressPort(absl::string_view address);

}  // namespace posewire

#endif  // POSEWIRE_PROTO_PROGRAM_H_
