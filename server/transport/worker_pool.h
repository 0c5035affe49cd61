// A fixed set of threads that run solves, so CPU-heavy work never blocks
// gRPC's own event-loop threads. --threads sizes it.
#ifndef POSEWIRE_SERVER_TRANSPORT_WORKER_POOL_H_
#define POSEWIRE_SERVER_TRANSPORT_WORKER_POOL_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace posewire::server {

class WorkerPool {
 public:
  explicit WorkerPool(int threads);
  // Runs every task already submitted, then joins the threads.
  ~WorkerPool();

  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues `task`. The queue is unbounded here because its producers are
  // bounded: one task per unary call in flight (capped by gRPC's resource
  // quota) and at most one per session (a session reads its next message
  // only after answering the previous one).
  void Submit(std::function<void()> task);

  int size() const { return static_cast<int>(threads_.size()); }

 private:
  void Loop();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_TRANSPORT_WORKER_POOL_H_
