// RecordBatch: several records copied into one growing buffer, for handing a batch of records to
// the example parser. clear() keeps the capacity, so a batch reused across steps stops allocating
// once it has seen its largest batch.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace pipec {

class RecordBatch {
 public:
  void clear() {
    data_.clear();
    ends_.clear();
    views_.clear();
  }
  void append(std::string_view record) {
    data_.append(record);
    ends_.push_back(data_.size());
  }
  size_t size() const { return ends_.size(); }
  bool empty() const { return ends_.empty(); }
  std::string_view operator[](size_t i) const {
    size_t begin = i == 0 ? 0 : ends_[i - 1];
    return std::string_view(data_).substr(begin, ends_[i] - begin);
  }
  /// Views of all records, valid until the batch is next modified.
  const std::vector<std::string_view>& views() {
    views_.clear();
    for (size_t i = 0; i < size(); ++i) views_.push_back((*this)[i]);
    return views_;
  }
  /// Total bytes of all records.
  size_t byte_size() const { return data_.size(); }

 private:
  std::string data_;
  std::vector<size_t> ends_;
  std::vector<std::string_view> views_;
};

}  // namespace pipec
