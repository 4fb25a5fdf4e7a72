// Reading a PyTorch profiler trace with nlohmann::json's SAX interface: only the fields of
// TraceEvent are kept (a DOM of a 1 GB trace would take ~10 GB), and an iterator that records
// how far the parser has read gives every event its byte offset for positioned errors.
#include "gradsync/trace/profiler_trace.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <iterator>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace gradsync {
namespace {

constexpr std::size_t kMaxTraceBytes = std::size_t{4} << 30;  // 4 GiB of JSON text

// A char iterator that writes its position to `cursor` as the parser reads.
class CountingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  CountingIterator(const char* p, const char** cursor) : p_(p), cursor_(cursor) {}
  reference operator*() const {
    *cursor_ = p_;
    return *p_;
  }
  CountingIterator& operator++() {
    ++p_;
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator old = *this;
    ++p_;
    return old;
  }
  bool operator==(const CountingIterator& o) const { return p_ == o.p_; }
  bool operator!=(const CountingIterator& o) const { return p_ != o.p_; }

 private:
  const char* p_;
  const char** cursor_;
};

// Builds TraceEvents from SAX callbacks. Frames track where the parser is: the events array
// (the root list, or traceEvents of the root object), an event, its args, "Input Dims".
class TraceSax {
 public:
  TraceSax(ProfilerTrace& trace, const char* begin, const char** cursor)
      : trace_(trace), begin_(begin), cursor_(cursor) {}

  bool null() { return scalar(Value{}); }
  bool boolean(bool) { return scalar(Value{}); }
  bool number_integer(std::int64_t v) { return scalar(number(static_cast<double>(v))); }
  bool number_unsigned(std::uint64_t v) { return scalar(number(static_cast<double>(v))); }
  bool number_float(double v, const std::string&) { return scalar(number(v)); }
  bool string(std::string& v) {
    Value x;
    x.kind = Value::String;
    x.text = std::move(v);
    return scalar(std::move(x));
  }
  bool binary(nlohmann::json::binary_t&) { return scalar(Value{}); }

  bool start_object(std::size_t) {
    const Where parent = where();
    if (frames_.empty()) {
      root_is_object_ = true;
      frames_.push_back({Frame::RootObject, ""});
    } else if (parent == Where::EventsArray) {
      event_ = TraceEvent{};
      event_.offset = offset();
      ph_.clear();
      has_name_ = has_ts_ = has_dur_ = false;
      frames_.push_back({Frame::Event, ""});
    } else if (parent == Where::EventKey && frames_.back().key == "args") {
      frames_.push_back({Frame::Args, ""});
    } else if (parent == Where::RootKey && frames_.back().key == "distributedInfo") {
      frames_.push_back({Frame::DistributedInfo, ""});
    } else {
      frames_.push_back({Frame::Other, ""});
    }
    return true;
  }
  bool key(std::string& k) {
    frames_.back().key = k;
    return true;
  }
  bool end_object() {
    const Frame f = frames_.back();
    frames_.pop_back();
    if (f.kind == Frame::Event) finish_event();
    return true;
  }
  bool start_array(std::size_t) {
    const Where parent = where();
    if (frames_.empty()) {
      frames_.push_back({Frame::EventsArray, ""});
    } else if (parent == Where::RootKey && frames_.back().key == "traceEvents") {
      has_events_ = true;
      frames_.push_back({Frame::EventsArray, ""});
    } else if (parent == Where::ArgsKey && frames_.back().key == "Input Dims") {
      frames_.push_back({Frame::Dims, ""});
    } else if (parent == Where::InDims) {
      frames_.push_back({Frame::Input, ""});
      input_sum_ = 0.0;
      tensor_ = 1.0;
      seen_ = false;
    } else if (parent == Where::InInput) {
      frames_.push_back({Frame::ListTensor, ""});
      tensor_ = 1.0;
      seen_ = false;
    } else {
      frames_.push_back({Frame::Other, ""});
    }
    return true;
  }
  bool end_array() {
    const Frame f = frames_.back();
    frames_.pop_back();
    if (f.kind == Frame::ListTensor && seen_) input_sum_ += tensor_;
    if (f.kind == Frame::Input) {
      if (seen_) input_sum_ += tensor_;
      event_.input_elements.push_back(input_sum_);
    }
    if (f.kind == Frame::ListTensor) seen_ = false;
    return true;
  }
  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::json::exception& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error while
    // parsing value - invalid literal; last read: 'tru'": keep what follows the position.
    const auto colon = what.find(": ", what.find("column"));
    if (colon != std::string::npos) what = what.substr(colon + 2);
    (void)last_token;
    throw ConfigError(trace_mark(trace_, position > 0 ? position - 1 : 0),
                      fmt::format("malformed JSON: {}", what));
  }

  [[nodiscard]] bool root_is_object() const { return root_is_object_; }
  [[nodiscard]] bool has_events() const { return has_events_; }

 private:
  struct Frame {
    enum Kind { RootObject, EventsArray, Event, Args, DistributedInfo, Dims, Input, ListTensor, Other };
    Kind kind;
    std::string key;
  };
  enum class Where { Nothing, EventsArray, EventKey, ArgsKey, RootKey, InfoKey, InDims, InInput,
                     InListTensor, Other };
  struct Value {
    enum Kind { None, Number, String } kind = None;
    double number = 0.0;
    std::string text;
  };
  static Value number(double v) {
    Value x;
    x.kind = Value::Number;
    x.number = v;
    return x;
  }

  [[nodiscard]] Where where() const {
    if (frames_.empty()) return Where::Nothing;
    switch (frames_.back().kind) {
      case Frame::EventsArray: return Where::EventsArray;
      case Frame::Event: return Where::EventKey;
      case Frame::Args: return Where::ArgsKey;
      case Frame::RootObject: return Where::RootKey;
      case Frame::DistributedInfo: return Where::InfoKey;
      case Frame::Dims: return Where::InDims;
      case Frame::Input: return Where::InInput;
      case Frame::ListTensor: return Where::InListTensor;
      case Frame::Other: return Where::Other;
    }
    return Where::Other;
  }
  [[nodiscard]] std::size_t offset() const {
    return static_cast<std::size_t>(*cursor_ - begin_);
  }

  bool scalar(Value v) {
    if (frames_.empty()) return true;  // a bare scalar document; rejected after parsing
    const std::string& key = frames_.back().key;
    switch (where()) {
      case Where::EventKey:
        event_field(key, std::move(v));
        break;
      case Where::ArgsKey:
        arg_field(key, std::move(v));
        break;
      case Where::InfoKey:
        if (v.kind == Value::Number && v.number >= 0.0 && v.number < 1e9) {
          if (key == "rank") trace_.rank = static_cast<std::uint32_t>(v.number);
          if (key == "world_size") trace_.world_size = static_cast<std::uint32_t>(v.number);
        }
        break;
      case Where::InInput:
      case Where::InListTensor:
        if (v.kind == Value::Number) {
          tensor_ *= v.number;
          seen_ = true;
        }
        break;
      default:
        break;
    }
    return true;
  }

  [[noreturn]] void fail_event(const std::string& message) const {
    throw ConfigError(trace_mark(trace_, event_.offset),
                      fmt::format("trace event {}{}: {}", trace_.events.size() + skipped_,
                                  event_.name.empty() ? "" : " '" + event_.name + "'", message));
  }

  void event_field(const std::string& key, Value v) {
    auto text = [&](std::string& out) {
      if (v.kind == Value::String) out = std::move(v.text);
      else if (v.kind == Value::Number) out = fmt::format("{:g}", v.number);
    };
    auto num = [&](double& out, bool& has) {
      if (v.kind != Value::Number)
        fail_event(fmt::format("\"{}\" must be a number of microseconds", key));
      out = v.number;
      has = true;
    };
    if (key == "name") {
      if (v.kind != Value::String) fail_event("\"name\" must be a string");
      event_.name = std::move(v.text);
      has_name_ = true;
    } else if (key == "ph") {
      text(ph_);
    } else if (key == "cat") {
      text(event_.cat);
    } else if (key == "ts") {
      num(event_.ts_us, has_ts_);
    } else if (key == "dur") {
      num(event_.dur_us, has_dur_);
    } else if (key == "tid") {
      text(tid_);
    } else if (key == "pid") {
      text(pid_);
    }
  }

  void arg_field(const std::string& key, Value v) {
    if (v.kind == Value::Number) {
      if (key == "In msg nelems") event_.in_nelems = v.number;
      if (key == "Out msg nelems") event_.out_nelems = v.number;
      if (key == "Group size" && v.number >= 1.0 && v.number < 1e9)
        event_.group_size = static_cast<std::uint32_t>(v.number);
      if (key == "Sequence number" && v.number >= 0.0 && v.number < 9e15)
        event_.sequence = static_cast<std::int64_t>(v.number);
    } else if (v.kind == Value::String) {
      if (key == "dtype") event_.dtype = std::move(v.text);
      else if (key == "Collective name") event_.collective = std::move(v.text);
    }
  }

  void finish_event() {
    event_.thread = pid_ + "/" + tid_;
    pid_.clear();
    tid_.clear();
    if (ph_ != "X") {
      ++skipped_;
      event_.input_elements.clear();
      return;
    }
    if (!has_name_) fail_event("a complete (\"ph\": \"X\") event needs a \"name\"");
    if (!has_ts_) fail_event("needs \"ts\" (microseconds)");
    if (!has_dur_) fail_event("needs \"dur\" (microseconds)");
    if (!(event_.dur_us >= 0.0) || !(event_.ts_us >= -1e18 && event_.ts_us <= 1e18) ||
        !(event_.dur_us <= 1e15))
      fail_event(fmt::format("ts {} and dur {} must be finite, dur at least 0", event_.ts_us,
                             event_.dur_us));
    trace_.events.push_back(std::move(event_));
    event_ = TraceEvent{};
  }

  ProfilerTrace& trace_;
  const char* begin_;
  const char** cursor_;
  std::vector<Frame> frames_;
  TraceEvent event_;
  std::string ph_, tid_, pid_;
  bool has_name_ = false, has_ts_ = false, has_dur_ = false;
  bool root_is_object_ = false, has_events_ = false;
  std::size_t skipped_ = 0;
  double input_sum_ = 0.0, tensor_ = 1.0;
  bool seen_ = false;
};

std::string read_file_text(const std::filesystem::path& path) {
  const std::string file = path.string();
  gzFile in = gzopen(file.c_str(), "rb");  // reads plain files as they are, too
  if (in == nullptr)
    throw ConfigError(SourceMark{file, 0, 0}, "cannot open the trace file");
  std::unique_ptr<gzFile_s, int (*)(gzFile)> guard(in, gzclose);
  std::string text;
  std::array<char, 1 << 16> buffer{};
  while (true) {
    const int n = gzread(in, buffer.data(), static_cast<unsigned>(buffer.size()));
    if (n < 0) {
      int code = 0;
      const char* msg = gzerror(in, &code);
      throw ConfigError(SourceMark{file, 0, 0},
                        fmt::format("cannot read the trace: {}", msg ? msg : "gzip error"));
    }
    if (n == 0) break;
    text.append(buffer.data(), static_cast<std::size_t>(n));
    if (text.size() > kMaxTraceBytes)
      throw ConfigError(SourceMark{file, 0, 0},
                        "the trace is larger than 4 GiB of JSON; profile fewer steps "
                        "(torch.profiler.schedule active=1..3)");
  }
  return text;
}

}  // namespace

SourceMark trace_mark(const ProfilerTrace& trace, std::size_t offset) {
  offset = std::min(offset, trace.text.size());
  int line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < offset; ++i)
    if (trace.text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  return SourceMark{trace.file, line, static_cast<int>(offset - line_start) + 1};
}

ProfilerTrace parse_profiler_trace(std::string text, const std::string& file) {
  ProfilerTrace trace;
  trace.file = file;
  trace.text = std::move(text);
  const char* begin = trace.text.data();
  const char* cursor = begin;
  TraceSax sax(trace, begin, &cursor);
  CountingIterator first(begin, &cursor);
  CountingIterator last(begin + trace.text.size(), &cursor);
  (void)nlohmann::json::sax_parse(first, last, &sax);
  const SourceMark top{file, 1, 1};
  if (sax.root_is_object() && !sax.has_events())
    throw ConfigError(top, "expected a PyTorch profiler trace: an object with \"traceEvents\" "
                           "(Kineto, torch 2.x) or a list of events (torch without Kineto); "
                           "this object has no \"traceEvents\"");
  if (!sax.root_is_object() && trace.text.find_first_not_of(" \t\r\n") != std::string::npos &&
      trace.text[trace.text.find_first_not_of(" \t\r\n")] != '[')
    throw ConfigError(top, "expected a PyTorch profiler trace: a JSON object with "
                           "\"traceEvents\" or a list of events");
  trace.format = sax.root_is_object() ? TraceFormat::Kineto : TraceFormat::Legacy;
  if (trace.events.empty())
    throw ConfigError(top, "the trace has no complete (\"ph\": \"X\") events: is it a "
                           "torch.profiler trace of a training step?");
  return trace;
}

ProfilerTrace read_profiler_trace(const std::filesystem::path& path) {
  return parse_profiler_trace(read_file_text(path), path.string());
}

}  // namespace gradsync
