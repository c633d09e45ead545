#include "lsp_source_index.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>
#include <sstream>

namespace gradscope::cli {
namespace {

// Longer lines (minified or generated code) are not searched for definitions: libstdc++'s
// regex recurses per character and would exhaust the stack on a line of megabytes.
constexpr std::size_t kMaxLine = 4096;
// The callee of a definition is read from this many bytes after it.
constexpr std::size_t kCalleeChars = 256;

// LSP positions count UTF-16 code units by default: one for each UTF-8 lead
// byte, two for a four-byte sequence (a surrogate pair).
int utf16_column(const std::string& line, std::size_t byte) {
  int col = 0;
  for (std::size_t i = 0; i < byte && i < line.size(); ++i) {
    const auto b = static_cast<unsigned char>(line[i]);
    if ((b & 0xC0) != 0x80) col += b >= 0xF0 ? 2 : 1;
  }
  return col;
}

bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The identifier ending before byte `end` of `line`, spaces skipped: {where it starts, it}.
std::pair<std::size_t, std::string> word_before(const std::string& line, std::size_t end) {
  while (end > 0 && std::isspace(static_cast<unsigned char>(line[end - 1]))) --end;
  std::size_t begin = end;
  while (begin > 0 && is_ident(line[begin - 1])) --begin;
  return {begin, line.substr(begin, end - begin)};
}

// LibTorch's convention: struct EncoderImpl, made a module holder by TORCH_MODULE(Encoder).
std::string without_impl(std::string name) {
  if (name.size() > 4 && name.compare(name.size() - 4, 4, "Impl") == 0)
    name.resize(name.size() - 4);
  return name;
}

// "nn.Linear(3, 4)" -> "Linear", "std::make_shared<EncoderImpl>()" ->
// "Encoder": the last component of the callee, with C++'s Impl suffix dropped
// so it names the TORCH_MODULE.
std::string callee_type(const std::string& rest) {
  static const std::regex shared(R"re(^\s*(?:std::)?make_shared\s*<\s*([\w:]+)\s*>)re");
  static const std::regex call(R"re(^\s*([A-Za-z_][\w.:]*)\s*[({])re");
  std::smatch m;
  std::string t;
  if (std::regex_search(rest, m, shared) || std::regex_search(rest, m, call)) t = m[1];
  const std::size_t cut = t.find_last_of(".:");
  if (cut != std::string::npos) t = t.substr(cut + 1);
  return without_impl(t);
}

// What the scan of a file carries from line to line: open brackets (with
// whether each opened a Sequential's or OrderedDict's argument list) and the
// classes we are inside.
struct ScanState {
  std::vector<bool> brackets;                        // true: a Sequential/OrderedDict region
  int regions = 0;                                   // how many of `brackets` are regions
  std::vector<std::pair<int, std::string>> classes;  // (indent or brace depth, name)
  std::string pending_class;                         // C++: "struct X" seen, its '{' not yet
};

// Marks, per byte of `line`, whether it lies inside a Sequential or OrderedDict
// argument list, updating the bracket state (string literals and comments are
// skipped, so a ')' in a string does not close anything).
std::vector<bool> scan_regions(const std::string& line, ScanState& s, SourceLanguage lang) {
  std::vector<bool> in_region(line.size() + 1, false);
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    in_region[i] = s.regions > 0;
    const char c = line[i];
    if (quote) {
      if (c == '\\')
        ++i;
      else if (c == quote)
        quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
      continue;
    }
    if ((lang == SourceLanguage::kPython && c == '#') ||
        (lang == SourceLanguage::kCpp && c == '/' && i + 1 < line.size() && line[i + 1] == '/'))
      break;
    if (c == '(' || c == '[' || c == '{') {
      // Does a Sequential/OrderedDict name (and for C++ an optional variable
      // name) precede it?
      auto [w, word] = word_before(line, i);
      if (lang == SourceLanguage::kCpp && word != "Sequential" && w > 0 &&
          word_before(line, w).second == "Sequential")
        word = "Sequential";
      const bool region = c != '[' && (word == "Sequential" || word == "OrderedDict");
      s.brackets.push_back(region);
      s.regions += region;
      if (c == '{' && !s.pending_class.empty()) {
        s.classes.emplace_back(static_cast<int>(s.brackets.size()), s.pending_class);
        s.pending_class.clear();
      }
    } else if ((c == ')' || c == ']' || c == '}') && !s.brackets.empty()) {
      if (c == '}' && lang == SourceLanguage::kCpp && !s.classes.empty() &&
          s.classes.back().first == static_cast<int>(s.brackets.size()))
        s.classes.pop_back();
      s.regions -= s.brackets.back();
      s.brackets.pop_back();
    } else if (c == ';') {
      s.pending_class.clear();  // "class X;": a declaration, no body follows
    }
    in_region[i + 1] = s.regions > 0;
  }
  return in_region;
}

int indent_of(const std::string& line) {
  int n = 0;
  for (char c : line) {
    if (c == ' ')
      ++n;
    else if (c == '\t')
      n += 8;
    else
      break;
  }
  return n;
}

}  // namespace

std::vector<SourceDefinition> index_source(const std::string& text, SourceLanguage lang) {
  // No pattern takes the rest of the line: a match must end where the name's definition does,
  // so the next entry of a one-line Sequential is found too; the callee is read from the text
  // after the match.
  static const std::regex py_attr(R"re(\bself\.([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=))re");
  static const std::regex py_add(R"re(\badd_module\(\s*(["'])([^"']+)\1\s*,)re");
  static const std::regex py_entry(R"re(\(\s*(["'])([^"']+)\1\s*,)re");
  static const std::regex py_class(R"re(^\s*class\s+([A-Za-z_]\w*))re");
  static const std::regex cpp_register(R"re(\bregister_module\(\s*"([^"]+)"\s*,)re");
  static const std::regex cpp_entry(R"re(\{\s*"([^"]+)"\s*,)re");
  static const std::regex cpp_class(R"re(\b(enum\s+)?(?:struct|class)\s+([A-Za-z_]\w*))re");

  std::vector<SourceDefinition> defs;
  ScanState state;
  std::istringstream lines(text);
  std::string line;
  const bool py = lang == SourceLanguage::kPython;
  for (int n = 0; std::getline(lines, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.size() > kMaxLine) {
      scan_regions(line, state, lang);  // brackets still open and close
      continue;
    }
    std::smatch m;
    if (py && state.brackets.empty()) {
      const std::size_t first = line.find_first_not_of(" \t");
      if (first != std::string::npos && line[first] != '#') {
        // Python ends a class where the indentation returns to its level.
        const int indent = indent_of(line);
        while (!state.classes.empty() && state.classes.back().first >= indent)
          state.classes.pop_back();
        if (std::regex_search(line, m, py_class)) state.classes.emplace_back(indent, m[1]);
      }
    }
    const std::string cls = state.classes.empty() ? "" : state.classes.back().second;
    if (!py && std::regex_search(line, m, cpp_class) && !m[1].matched &&
        m.suffix().str().find(';') == std::string::npos) {  // "class X;" declares, no body
      state.pending_class = without_impl(m[2]);
    }
    const std::vector<bool> region = scan_regions(line, state, lang);
    // Each pattern can appear more than once on a line (a one-line Sequential).
    const auto each = [&](const std::regex& re, int name_group, bool in_region) {
      for (auto it = std::sregex_iterator(line.begin(), line.end(), re);
           it != std::sregex_iterator(); ++it) {
        const std::size_t at = static_cast<std::size_t>(it->position(0));
        if (in_region && !region[at]) continue;
        const std::ssub_match& name = (*it)[name_group];
        defs.push_back({name.str(), n,
                        utf16_column(line, static_cast<std::size_t>(name.first - line.begin())),
                        utf16_column(line, static_cast<std::size_t>(name.second - line.begin())),
                        cls, callee_type(it->suffix().str().substr(0, kCalleeChars))});
      }
    };
    const std::size_t first = line.find_first_not_of(" \t");
    const bool comment =
        first != std::string::npos && (py ? line[first] == '#' : line.compare(first, 2, "//") == 0);
    if (comment) continue;
    if (py) {
      each(py_attr, 1, false);
      each(py_add, 2, false);
      each(py_entry, 2, true);
    } else {
      each(cpp_register, 1, false);
      each(cpp_entry, 1, true);
    }
  }
  // A regex iterator's matches do not overlap, but the same name can be found
  // by two patterns (an add_module call inside an OrderedDict region): keep one
  // per position.
  std::sort(defs.begin(), defs.end(), [](const SourceDefinition& a, const SourceDefinition& b) {
    return std::tie(a.line, a.begin) < std::tie(b.line, b.begin);
  });
  defs.erase(std::unique(defs.begin(), defs.end(),
                         [](const SourceDefinition& a, const SourceDefinition& b) {
                           return a.line == b.line && a.begin == b.begin;
                         }),
             defs.end());
  return defs;
}

std::vector<const SourceDefinition*> definitions_of(const std::string& node,
                                                    const std::vector<SourceDefinition>& defs) {
  std::vector<std::string> parts;
  std::string part;
  for (char c : node + "/") {
    if (c == '/' || c == '.') {
      if (!part.empty()) parts.push_back(part);
      part.clear();
    } else {
      part.push_back(c);
    }
  }
  std::vector<const SourceDefinition*> out;
  if (parts.empty() || std::all_of(parts.back().begin(), parts.back().end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      }))
    return out;
  for (const SourceDefinition& d : defs)
    if (d.name == parts.back()) out.push_back(&d);
  if (out.size() < 2) return out;
  if (parts.size() < 2) {
    // A top-level node is a child of the model itself, and the model is the class nothing in
    // the file builds: drop definitions inside classes that are some attribute's type.
    std::set<std::string> built;
    for (const SourceDefinition& d : defs)
      if (!d.type.empty()) built.insert(d.type);
    std::vector<const SourceDefinition*> outside;
    for (const SourceDefinition* d : out)
      if (!built.count(d->enclosing_class)) outside.push_back(d);
    return outside.empty() ? out : outside;
  }
  // Several definitions of the name: keep those in the class the parent
  // component is built from, when the file says which ("self.encoder =
  // Encoder(...)").
  std::set<std::string> parent_types;
  for (const SourceDefinition& d : defs)
    if (d.name == parts[parts.size() - 2] && !d.type.empty()) parent_types.insert(d.type);
  std::vector<const SourceDefinition*> inside;
  for (const SourceDefinition* d : out)
    if (parent_types.count(d->enclosing_class)) inside.push_back(d);
  return inside.empty() ? out : inside;
}

bool source_language(const std::string& language_id, const std::string& uri, SourceLanguage& out) {
  if (language_id == "python") return out = SourceLanguage::kPython, true;
  if (language_id == "cpp" || language_id == "c") return out = SourceLanguage::kCpp, true;
  const std::size_t dot = uri.find_last_of('.');
  const std::string ext = dot == std::string::npos ? "" : uri.substr(dot + 1);
  if (ext == "py" || ext == "pyi") return out = SourceLanguage::kPython, true;
  for (const char* e : {"cpp", "cc", "cxx", "h", "hpp", "hh", "hxx"})
    if (ext == e) return out = SourceLanguage::kCpp, true;
  return false;
}

}  // namespace gradscope::cli
