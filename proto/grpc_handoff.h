// Shared by the server and the load generator, both sides of the contract.
// Happens-before annotations for ThreadSanitizer at the points where our
// code hands a callback-API reactor to gRPC's threads and takes it back.
//
// gRPC orders a reactor's callbacks after the calls that start them
// (StartRead before OnReadDone, Finish before OnDone, an async call before
// its completion callback), but through its own atomics and locks, which
// TSan cannot see in Debian's uninstrumented libgrpc: every member one
// thread wrote would look racy when a gRPC thread reads it or deletes the
// reactor. Calling HandOffToGrpc(reactor) just before such a call, and
// TakeBackFromGrpc(reactor) first thing in each callback, states that
// ordering, so TSan checks everything else (scripts/sanitize.sh tsan). In
// builds without TSan both are empty.
#ifndef POSEWIRE_PROTO_GRPC_HANDOFF_H_
#define POSEWIRE_PROTO_GRPC_HANDOFF_H_

// POSEWIRE_TSAN: 1 in a ThreadSanitizer build. GCC defines
// __SANITIZE_THREAD__; clang only answers __has_feature(thread_sanitizer).
#if defined(__SANITIZE_THREAD__)
#define POSEWIRE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define POSEWIRE_TSAN 1
#endif
#endif
#ifndef POSEWIRE_TSAN
#define POSEWIRE_TSAN 0
#endif

#if POSEWIRE_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace posewire {

inline void HandOffToGrpc([[maybe_unused]] void* reactor) {
#if POSEWIRE_TSAN
  __tsan_release(reactor);
#endif
}

inline void TakeBackFromGrpc([[maybe_unused]] void* reactor) {
#if POSEWIRE_TSAN
  __tsan_acquire(reactor);
#endif
}

}  // namespace posewire

#endif  // POSEWIRE_PROTO_GRPC_HANDOFF_H_
