// A bounded multi-producer multi-consumer blocking queue: the buffer between two pipeline stages.
//
// Bounded so a fast producer cannot run ahead of a slow consumer and fill memory (backpressure).
// close() is how a producer says "no more items"; consumers drain what is left and then see an empty
// optional. Every blocking call can also observe a CancellationToken and returns promptly when it
// fires, so Ctrl-C never leaves a thread stuck on a full or empty queue.
//
// Waking a sleeping thread is the costly part of a hand-off (a futex wake on one side, a context switch
// on the other: 8-10% of the CPU of the chess pipeline, whose consumer waits for every batch). So a
// consumer that is faster than its producer may ask to sleep until several items are ready
// (pop_when): it then takes them one after the other without sleeping in between, one wake-up for
// `want` items. A producer that is about to wait for something other than the queue's room calls
// release_waiters() first, so a consumer never waits for items that cannot come.
//
// The waits use std::condition_variable, not condition_variable_any (whose stop_token wait would do
// the cancelling for us): condition_variable_any notifies under a mutex of its own, which the woken
// thread then has to take, so on a busy machine most wake-ups cost a second context switch (a third of
// the chess pipeline's switches were that). A stop instead wakes the waiters through a stop_callback,
// registered only around a wait that sleeps.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <utility>

#include "runtime/threads/cancellation.h"

namespace pipec {

template <class T>
class BoundedQueue {
 public:
  /// capacity >= 1 items.
  explicit BoundedQueue(size_t capacity) : capacity_(capacity) {
    if (capacity == 0) throw std::invalid_argument("BoundedQueue: capacity must be at least 1");
  }
  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;

  /// Blocks while full. Returns false if the queue is or becomes closed; `item` is moved from only on
  /// success, so on false the caller still owns it (e.g. to keep it for a checkpoint).
  bool push(T&& item) { return push_impl(item, std::stop_token{}); }
  bool push(const T& item) {
    T copy(item);
    return push_impl(copy, std::stop_token{});
  }
  /// As push(), but also returns false (leaving `item` untouched) when `cancel` fires while waiting.
  bool push(T&& item, const CancellationToken& cancel) { return push_impl(item, cancel.stop_token()); }
  bool push(const T& item, const CancellationToken& cancel) {
    T copy(item);
    return push_impl(copy, cancel.stop_token());
  }

  /// Blocks while empty and open. Returns nullopt once the queue is closed and drained.
  std::optional<T> pop() { return pop_impl(std::stop_token{}, 1); }
  /// As pop(), but also returns nullopt when `cancel` fires while waiting; tell the two apart with
  /// cancel.cancelled().
  std::optional<T> pop(const CancellationToken& cancel) { return pop_impl(cancel.stop_token(), 1); }
  /// As pop(cancel), but when the queue is empty, sleeps until `want` items are queued (at most the
  /// capacity), the queue is closed, or the producer has called release_waiters(). For one consumer.
  std::optional<T> pop_when(size_t want, const CancellationToken& cancel) {
    return pop_impl(cancel.stop_token(), want);
  }

  /// Consumers in pop_when() take whatever is queued from now on, until hold_waiters(). For the
  /// producer, before it waits for anything but the queue's room (or pushes its last item).
  void release_waiters() {
    {
      std::lock_guard lock(mu_);
      released_ = true;
    }
    not_empty_.notify_all();
  }
  /// Undoes release_waiters(): pop_when() waits for its `want` items again.
  void hold_waiters() {
    std::lock_guard lock(mu_);
    released_ = false;
  }

  /// Non-blocking variants. try_push leaves `item` untouched when it returns false (full or closed).
  bool try_push(T& item) {
    bool wake;
    {
      std::lock_guard lock(mu_);
      if (closed_ || items_.size() >= capacity_) return false;
      items_.push_back(std::move(item));
      wake = enough_locked();
    }
    if (wake) not_empty_.notify_one();
    return true;
  }
  std::optional<T> try_pop() {
    std::optional<T> out;
    {
      std::lock_guard lock(mu_);
      if (items_.empty()) return std::nullopt;
      out.emplace(std::move(items_.front()));
      items_.pop_front();
    }
    not_full_.notify_one();
    return out;
  }

  /// No more pushes: wakes every waiter. Items already queued can still be popped. Idempotent.
  void close() {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
    }
    not_full_.notify_all();
    not_empty_.notify_all();
  }

  bool closed() const {
    std::lock_guard lock(mu_);
    return closed_;
  }
  size_t size() const {
    std::lock_guard lock(mu_);
    return items_.size();
  }
  size_t capacity() const {
    std::lock_guard lock(mu_);
    return capacity_;
  }
  /// Changes the capacity (at least 1). Items already queued stay; a smaller capacity makes pushes
  /// wait until the queue has drained below it.
  void set_capacity(size_t capacity) {
    {
      std::lock_guard lock(mu_);
      const size_t c = capacity == 0 ? 1 : capacity;
      if (c == capacity_) return;  // a prefetch sets it before every pop: no wake-ups for nothing
      capacity_ = c;
    }
    not_full_.notify_all();
    not_empty_.notify_all();  // a consumer waiting for more items than now fit
  }

 private:
  // Moves from `item` only when it is enqueued.
  bool push_impl(T& item, std::stop_token stop) {
    bool wake;
    {
      std::unique_lock lock(mu_);
      // false: the stop token fired first.
      if (!wait_unless_stopped(not_full_, lock, stop, [&] { return closed_ || items_.size() < capacity_; })) {
        return false;
      }
      if (closed_) return false;
      items_.push_back(std::move(item));
      wake = enough_locked();
    }
    // No wake-up while the waiting consumer wants more: it would only find too few and sleep again.
    if (wake) not_empty_.notify_one();
    return true;
  }

  // Whether a consumer waiting in pop_when() would take what is queued now.
  bool enough_locked() const { return items_.size() >= std::min(want_, capacity_) || released_; }

  std::optional<T> pop_impl(std::stop_token stop, size_t want) {
    std::optional<T> out;
    {
      std::unique_lock lock(mu_);
      if (items_.empty() && !closed_) {
        want_ = want == 0 ? 1 : want;
        // false: the stop token fired first.
        const bool ready = wait_unless_stopped(not_empty_, lock, stop,
                                               [&] { return closed_ || (!items_.empty() && enough_locked()); });
        want_ = 1;
        if (!ready) return std::nullopt;
      }
      if (items_.empty()) return std::nullopt;  // closed and drained
      out.emplace(std::move(items_.front()));
      items_.pop_front();
    }
    not_full_.notify_one();
    return out;
  }

  // Waits on `cv` (`lock` holds mu_) until pred() holds, true, or a stop is requested first, false.
  template <class Pred>
  bool wait_unless_stopped(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, const std::stop_token& stop,
                           Pred pred) {
    if (pred()) return true;
    if (!stop.stop_possible()) {
      cv.wait(lock, pred);
      return true;
    }
    for (;;) {
      if (stop.stop_requested()) return false;
      // The callback takes mu_, so it is registered and unregistered with mu_ free (it may run at once,
      // here, or on the stopping thread while this one would hold mu_). Taking mu_ before notifying
      // means a stop cannot fall between the waiter's check of the token and its sleep.
      lock.unlock();
      {
        std::stop_callback wake(stop, [&] {
          { std::lock_guard guard(mu_); }
          cv.notify_all();
        });
        lock.lock();
        while (!pred() && !stop.stop_requested()) cv.wait(lock);
        lock.unlock();
      }
      lock.lock();
      if (pred()) return true;  // looked at again: the state may have moved while mu_ was free
    }
  }

  size_t capacity_;  // guarded by mu_
  mutable std::mutex mu_;
  std::condition_variable not_full_;
  std::condition_variable not_empty_;
  std::deque<T> items_;
  bool closed_ = false;
  size_t want_ = 1;        // what the waiting consumer wants queued before it wakes (pop_when)
  bool released_ = false;  // release_waiters(): take whatever is there
};

}  // namespace pipec
