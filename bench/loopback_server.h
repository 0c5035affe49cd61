// One posewire server on loopback for a benchmark program, started on
// first use and kept for the program's life (as a deployment runs one per
// machine); the program exits with the reason if it cannot start.
#ifndef POSEWIRE_BENCH_LOOPBACK_SERVER_H_
#define POSEWIRE_BENCH_LOOPBACK_SERVER_H_

#include <cstdlib>
#include <iostream>

#include "server/transport/server.h"

namespace posewire::bench {

inline server::PosewireServer& LoopbackServer(const char* program) {
  static server::PosewireServer* server = [program] {
    server::ServerConfig config;
    config.listen = "127.0.0.1:0";
    config.threads = 2;
    auto started = server::PosewireServer::Start(config);
    if (!started.ok()) {
      std::cerr << program << ": " << started.status() << "\n";
      std::exit(1);
    }
    return started->release();
  }();
  return *server;
}

}  // namespace posewire::bench

#endif  // POSEWIRE_BENCH_LOOPBACK_SERVER_H_
