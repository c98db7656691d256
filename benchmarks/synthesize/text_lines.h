// The lines of a kernel text file (/proc/<pid>/maps, /proc/<pid>/status), for parsers
// that walk them one at a time without copying: split at '\n', where a final '\n' ends
// the last line rather than starting an empty one ("a\nb\n" and "a\nb" are both the two
// lines "a" and "b"; "" has none; an empty line inside the text is kept).
//
// Example:
//   for (absl::string_view line : perfscale::TextLines(text)) { ... }
#ifndef PERFSCALE_BENCHMARKS_SYNTHESIZE_TEXT_LINES_H_
#define PERFSCALE_BENCHMARKS_SYNTHESIZE_TEXT_LINES_H_

#include <cstddef>
#include <iterator>

#include "absl/strings/string_view.h"

namespace perfscale {

class TextLines {
 public:
  explicit TextLines(absl::string_view text) : text_(text) {}

  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = absl::string_view;
    using difference_type = std::ptrdiff_t;
    using pointer = const absl::string_view*;
    using reference = absl::string_view;

    iterator(absl::string_view text, size_t pos) : text_(text), pos_(pos) { Find(); }
    absl::string_view operator*() const { return text_.substr(pos_, end_ - pos_); }
    iterator& operator++() {
      pos_ = end_ + 1;
      Find();
      return *this;
    }
    bool operator==(const iterator& other) const { return pos_ == other.pos_; }
    bool operator!=(const iterator& other) const { return pos_ != other.pos_; }

   private:
    void Find() {
      if (pos_ >= text_.size()) {
        pos_ = end_ = text_.size();
        return;
      }
      end_ = text_.find('\n', pos_);
      if (end_ == absl::string_view::npos) end_ = text_.size();
    }

    absl::string_view text_;
    size_t pos_;
    size_t end_ = 0;
  };

  iterator begin() const { return iterator(text_, 0); }
  iterator end() const { return iterator(text_, text_.size()); }

 private:
  absl::string_view text_;
};

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_SYNTHESIZE_TEXT_LINES_H_
