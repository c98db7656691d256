#include "testing/common/mini_json.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace perfscale {
namespace testing {
namespace {

class Parser {
 public:
  explicit Parser(absl::string_view text) : text_(text) {}

  absl::StatusOr<Json> ParseDocument() {
    absl::StatusOr<Json> value = ParseValue(0);
    if (!value.ok()) return value;
    SkipSpace();
    if (pos_ != text_.size()) return Error("trailing characters");
    return value;
  }

 private:
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("JSON: ", what, " at offset ", pos_));
  }

  void SkipSpace() {
    while (pos_ < text_.size() && absl::ascii_isspace(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
    }
  }

  bool Consume(absl::string_view literal) {
    if (text_.substr(pos_, literal.size()) != literal) return false;
    pos_ += literal.size();
    return true;
  }

  absl::StatusOr<Json> ParseValue(int depth) {
    if (depth > 64) return Error("nested too deeply");
    SkipSpace();
    if (pos_ >= text_.size()) return Error("unexpected end");
    Json value;
    char c = text_[pos_];
    if (c == '{') return ParseObject(depth);
    if (c == '[') return ParseArray(depth);
    if (c == '"') {
      absl::StatusOr<std::string> s = ParseString();
      if (!s.ok()) return s.status();
      value.type = Json::kString;
      value.string = *std::move(s);
      return value;
    }
    if (Consume("true")) {
      value.type = Json::kBool;
      value.boolean = true;
      return value;
    }
    if (Consume("false")) {
      value.type = Json::kBool;
      return value;
    }
    if (Consume("null")) return value;
    size_t start = pos_;
    while (pos_ < text_.size() &&
           (absl::ascii_isdigit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '-' ||
            text_[pos_] == '+' || text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
    }
    // Google Benchmark writes NaN and Inf unquoted when a counter divides by zero.
    if (pos_ == start && (Consume("NaN") || Consume("nan"))) {
      value.type = Json::kNumber;
      value.number = std::strtod("nan", nullptr);
      return value;
    }
    if (pos_ == start || !absl::SimpleAtod(text_.substr(start, pos_ - start), &value.number)) {
      pos_ = start;
      return Error("bad value");
    }
    value.type = Json::kNumber;
    return value;
  }

  absl::StatusOr<std::string> ParseString() {
    ++pos_;  // the opening quote
    std::string out;
    while (pos_ < text_.size()) {
      char c = text_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) break;
      char e = text_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          // Tests only compare ASCII; keep other code points as '?'.
          if (pos_ + 4 > text_.size()) return Error("short \\u escape");
          unsigned long code =
              std::strtoul(std::string(text_.substr(pos_, 4)).c_str(), nullptr, 16);
          out += code < 0x80 ? static_cast<char>(code) : '?';
          pos_ += 4;
          break;
        }
        default:
          return Error("bad escape");
      }
    }
    return Error("unterminated string");
  }

  absl::StatusOr<Json> ParseArray(int depth) {
    ++pos_;
    Json value;
    value.type = Json::kArray;
    SkipSpace();
    if (Consume("]")) return value;
    for (;;) {
      absl::StatusOr<Json> item = ParseValue(depth + 1);
      if (!item.ok()) return item;
      value.array.push_back(*std::move(item));
      SkipSpace();
      if (Consume("]")) return value;
      if (!Consume(",")) return Error("expected , or ]");
    }
  }

  absl::StatusOr<Json> ParseObject(int depth) {
    ++pos_;
    Json value;
    value.type = Json::kObject;
    SkipSpace();
    if (Consume("}")) return value;
    for (;;) {
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] != '"') return Error("expected a key");
      absl::StatusOr<std::string> key = ParseString();
      if (!key.ok()) return key.status();
      SkipSpace();
      if (!Consume(":")) return Error("expected :");
      absl::StatusOr<Json> member = ParseValue(depth + 1);
      if (!member.ok()) return member;
      value.object.emplace_back(*std::move(key), *std::move(member));
      SkipSpace();
      if (Consume("}")) return value;
      if (!Consume(",")) return Error("expected , or }");
    }
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

const Json* Json::Find(absl::string_view key) const {
  for (const auto& [name, member] : object) {
    if (name == key) return &member;
  }
  return nullptr;
}

absl::StatusOr<Json> ParseJson(absl::string_view text) { return Parser(text).ParseDocument(); }

}  // namespace testing
}  // namespace perfscale
