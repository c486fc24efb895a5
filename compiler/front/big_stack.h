// Running deeply recursive work (parsing, checking) on a private thread with a large stack.
#pragma once

#include <cstddef>
#include <functional>

namespace pipec {

/// Runs `work` to completion on a new thread whose stack is `stack_bytes` large and waits for it, so
/// that a pathological input (a 10 MB chain of `1+1+...`) cannot overflow the caller's stack. Falls back
/// to running `work` on the calling thread when no such thread can be created. Exceptions thrown by
/// `work` are rethrown on the caller's thread.
void run_with_big_stack(std::size_t stack_bytes, const std::function<void()>& work);

}  // namespace pipec
