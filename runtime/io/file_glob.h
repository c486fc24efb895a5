// Expanding file patterns ("data/train-*.tfrecord") into sorted file lists with POSIX glob(3).
//
// Results are sorted bytewise (not by locale) so that shard files come in shard order and every
// run sees the same order. Directories are left out: a pattern like "data/*" names the files in it.
// A pattern that matches no file, or a plain path that does not exist, is a NotFound DataError
// naming the pattern, raised here rather than later as an empty dataset.
#pragma once

#include <string>
#include <vector>

namespace pipec {

/// The files matching `pattern`, sorted. A path with glob characters that exists literally
/// (e.g. "data[1].rec") is returned as is.
std::vector<std::string> expand_glob(const std::string& pattern);
/// expand_glob of each pattern, concatenated in pattern order (each pattern's files sorted).
std::vector<std::string> expand_globs(const std::vector<std::string>& patterns);

}  // namespace pipec
