#include "runtime/io/file_glob.h"

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runtime/io/errors.h"

namespace pipec {
namespace {

enum class PathKind { Missing, File, Directory };

PathKind stat_path(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return PathKind::Missing;
  return S_ISDIR(st.st_mode) ? PathKind::Directory : PathKind::File;
}

bool has_glob_chars(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

// glob(3) owns its result array; this frees it on every path out, exceptions included.
struct GlobResult {
  glob_t g{};
  ~GlobResult() { globfree(&g); }
};

}  // namespace

std::vector<std::string> expand_glob(const std::string& pattern) {
  if (pattern.empty()) throw DataError(DataError::Kind::InvalidArgument, "empty file pattern");
  PathKind literal = stat_path(pattern);
  if (literal == PathKind::File) return {pattern};
  if (!has_glob_chars(pattern)) {
    if (literal == PathKind::Directory)
      throw DataError(DataError::Kind::InvalidArgument, "is a directory, not a file", DataLocation{.file = pattern});
    throw DataError(DataError::Kind::NotFound, "no such file", DataLocation{.file = pattern});
  }

  GlobResult r;
  // GLOB_NOSORT: we sort bytewise below; glob's own sort follows the locale's collation.
  int rc = ::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &r.g);
  if (rc == GLOB_NOSPACE) throw std::bad_alloc();
  if (rc == GLOB_ABORTED)
    throw DataError(DataError::Kind::Io, "reading a directory failed while matching the pattern",
                    DataLocation{.file = pattern});
  std::vector<std::string> files;
  if (rc == 0) {
    for (size_t i = 0; i < r.g.gl_pathc; ++i) {
      std::string path = r.g.gl_pathv[i];
      if (stat_path(path) == PathKind::File) files.push_back(std::move(path));
    }
  }
  if (files.empty())
    throw DataError(DataError::Kind::NotFound, "no file matches the pattern", DataLocation{.file = pattern});
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> expand_globs(const std::vector<std::string>& patterns) {
  std::vector<std::string> all;
  for (const auto& p : patterns) {
    std::vector<std::string> files = expand_glob(p);
    all.insert(all.end(), std::make_move_iterator(files.begin()), std::make_move_iterator(files.end()));
  }
  return all;
}

}  // namespace pipec
