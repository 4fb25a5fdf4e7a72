#include "duplicate_keys.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <map>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "gradsync/config_error.hpp"

namespace gradsync::config {

namespace {

class DuplicateKeyFinder : public YAML::EventHandler {
 public:
  explicit DuplicateKeyFinder(std::string file) : file_(std::move(file)) {}

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { item(mark, "~"); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { item(mark, "*alias"); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string& value) override {
    item(mark, value);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    item(mark, "");  // a collection as a key is never compared, only counted
    frames_.push_back(Frame{false, true, {}});
  }
  void OnSequenceEnd() override { frames_.pop_back(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    item(mark, "");
    frames_.push_back(Frame{true, true, {}});
  }
  void OnMapEnd() override { frames_.pop_back(); }

 private:
  struct Frame {
    bool is_map;
    bool expecting_key;
    std::map<std::string, int> keys;  // key -> 1-based line of first occurrence
  };

  void item(const YAML::Mark& mark, const std::string& value) {
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
  std::vector<Frame> frames_;
};

}  // namespace

void reject_duplicate_keys(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DuplicateKeyFinder finder(file);
  try {
    while (parser.HandleNextDocument(finder)) {
    }
  } catch (const YAML::Exception&) {
    // Syntax errors: the regular load reports them with their position.
  }
}

}  // namespace gradsync::config
