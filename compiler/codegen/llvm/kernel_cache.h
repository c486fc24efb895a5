// The on-disk cache of compiled kernel objects, so that a second run loads machine code instead of
// running LLVM again.
//
// Key: SHA-1 of (unoptimized module IR text, target triple, CPU, features, pipec version), so any change
// to the kernel, the host or pipec misses. Location: $PIPEC_CACHE_DIR, else $XDG_CACHE_HOME/pipec, else
// ~/.cache/pipec; one file <key>.o per kernel module holding a header line with the SHA-1 of the object
// bytes and then the bytes. Writes are atomic (temporary file + rename); a file whose checksum does not
// match (truncated, corrupted) reads as a miss and is rewritten by the caller.
#pragma once

#include <optional>
#include <string>

namespace pipec::codegen {

/// The cache directory the environment selects (not created).
std::string default_cache_dir();

/// The cache key of a module: hex SHA-1 of its IR text and the target and pipec version.
std::string kernel_cache_key(const std::string& ir_text, const std::string& target);

/// The object stored under `key`, or nullopt when absent or corrupt.
std::optional<std::string> cache_load(const std::string& dir, const std::string& key);

/// Stores `object` under `key`; returns false (and leaves no partial file) when the directory is not
/// writable. Caching is best effort: failing to store never fails a run.
bool cache_store(const std::string& dir, const std::string& key, const std::string& object);

}  // namespace pipec::codegen
