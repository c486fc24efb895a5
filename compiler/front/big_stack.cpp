#include "compiler/front/big_stack.h"

#include <pthread.h>

#include <exception>

namespace pipec {

void run_with_big_stack(std::size_t stack_bytes, const std::function<void()>& work) {
  std::exception_ptr error;
  std::function<void()> guarded = [&] {
    try {
      work();
    } catch (...) {
      error = std::current_exception();
    }
  };
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, stack_bytes);
  pthread_t thread;
  auto trampoline = [](void* p) -> void* {
    (*static_cast<std::function<void()>*>(p))();
    return nullptr;
  };
  if (pthread_create(&thread, &attr, trampoline, &guarded) == 0) {
    pthread_join(thread, nullptr);
  } else {
    guarded();
  }
  pthread_attr_destroy(&attr);
  if (error) std::rethrow_exception(error);
}

}  // namespace pipec
