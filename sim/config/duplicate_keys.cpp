#include "duplicate_keys.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <map>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "gradsync/units/config_error.hpp"

namespace gradsync::config {

namespace {

class DuplicateKeyFinder : public YAML::EventHandler {
 public:
  DuplicateKeyFinder(std::string file, const std::string& text)
      : file_(std::move(file)), text_(text) {}

  void OnDocumentStart(const YAML::Mark& mark) override {
    // yaml-cpp 0.7 does not consume a ',' that starts a document: it reports an empty document
    // at the same place, forever (the file would hang every load). Stop at the second one.
    if (documents_ > 0 && mark.pos == document_start_.pos) {
      const auto pos = static_cast<std::size_t>(mark.pos);
      const char c = pos < text_.size() ? text_[pos] : ',';
      throw ConfigError(SourceMark{file_, mark.line + 1, mark.column + 1},
                        fmt::format("invalid YAML: unexpected '{}'", c));
    }
    ++documents_;
    document_start_ = mark;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { item(mark, "~"); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { item(mark, "*alias"); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string& value) override {
    item(mark, value);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value style) override {
    item(mark, "");  // a collection as a key is never compared, only counted
    frames_.push_back(Frame{false, true, {}, mark, style == YAML::EmitterStyle::Flow});
  }
  void OnSequenceEnd() override { frames_.pop_back(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value style) override {
    item(mark, "");
    frames_.push_back(Frame{true, true, {}, mark, style == YAML::EmitterStyle::Flow});
  }
  void OnMapEnd() override { frames_.pop_back(); }

  // Documents seen so far (the one being read included).
  [[nodiscard]] int documents() const { return documents_; }

  // The innermost '[' or '{' still open (after a syntax error), if any.
  [[nodiscard]] const YAML::Mark* open_flow(bool is_map) const {
    for (auto it = frames_.rbegin(); it != frames_.rend(); ++it)
      if (it->flow) return it->is_map == is_map ? &it->start : nullptr;
    return nullptr;
  }

 private:
  struct Frame {
    bool is_map;
    bool expecting_key;
    std::map<std::string, int> keys;  // key -> 1-based line of first occurrence
    YAML::Mark start;
    bool flow = false;  // written as [..] or {..}
  };

  void item(const YAML::Mark& mark, const std::string& value) {
    if (frames_.empty() && documents_ > 1 && value != "~") {
      // The root of a second document, which a plain load would silently ignore.
      int line = document_start_.line + 1;  // the '---' that starts it, else the node itself
      if (text_.compare(static_cast<std::size_t>(document_start_.pos), 3, "---") != 0)
        line = mark.line + 1;
      throw ConfigError(SourceMark{file_, line, line == mark.line + 1 ? mark.column + 1 : 1},
                        "a second YAML document (after '---'); a gradsync file holds one");
    }
    if (frames_.empty() || !frames_.back().is_map) return;
    Frame& f = frames_.back();
    if (f.expecting_key && !value.empty()) {
      const auto [it, inserted] = f.keys.emplace(value, mark.line + 1);
      if (!inserted)
        throw ConfigError(SourceMark{file_, mark.line + 1, mark.column + 1},
                          fmt::format("duplicate key '{}' (first given at line {})", value,
                                      it->second));
    }
    f.expecting_key = !f.expecting_key;
  }

  std::string file_;
  const std::string& text_;
  std::vector<Frame> frames_;
  int documents_ = 0;
  YAML::Mark document_start_;
};

}  // namespace

void reject_duplicate_keys(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DuplicateKeyFinder finder(file, text);
  try {
    while (parser.HandleNextDocument(finder)) {
    }
  } catch (const YAML::Exception& e) {
    // Syntax errors: the regular load reports them with their position, except an unclosed
    // '[' or '{', which yaml-cpp reports at the end of the file: point at the bracket instead.
    const bool map = e.msg == YAML::ErrorMsg::END_OF_MAP_FLOW;
    if ((map || e.msg == YAML::ErrorMsg::END_OF_SEQ_FLOW) &&
        static_cast<std::size_t>(e.mark.pos) >= text.size()) {
      if (const YAML::Mark* open = finder.open_flow(map))
        throw ConfigError(SourceMark{file, open->line + 1, open->column + 1},
                          fmt::format("invalid YAML: this '{}' is never closed", map ? '{' : '['));
    }
    // The regular load reads the first document only: report errors in later ones here.
    if (finder.documents() > 1)
      throw ConfigError(SourceMark{file, e.mark.line + 1, e.mark.column + 1},
                        "invalid YAML: " + e.msg);
  }
}

}  // namespace gradsync::config
