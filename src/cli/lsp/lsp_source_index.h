// Where a model's nodes are defined in a source file, found by reading the text
// (no parser): Python `self.fc1 = nn.Linear(...)`, `add_module("fc1", ...)` and
// the names of an `nn.Sequential(OrderedDict([("fc1", ...)]))`; C++
// `register_module("fc1", ...)` and the names of `nn::Sequential({{"fc1",
// ...}})`. docs/editor.md says what is matched and what is not.
//
//   auto defs = gradscope::cli::index_source(text,
//   gradscope::cli::SourceLanguage::kPython); auto at =
//   gradscope::cli::definitions_of("encoder/fc1", defs);  // self.fc1 in class
//   Encoder
#pragma once

#include <string>
#include <vector>

namespace gradscope::cli {

enum class SourceLanguage { kPython, kCpp };

/// One name defined in the source: its line (0-based) and UTF-16 columns
/// [begin, end), as LSP positions count them, the class it is defined in ("" at
/// top level; C++ `FooImpl` is "Foo", as TORCH_MODULE names it) and the type it
/// is built from when simple ("Encoder" for `self.encoder = Encoder(...)`; ""
/// when not known).
struct SourceDefinition {
  std::string name;
  int line = 0, begin = 0, end = 0;
  std::string enclosing_class, type;
};

/// Every definition in `text`, in source order.
std::vector<SourceDefinition> index_source(const std::string& text, SourceLanguage language);

/// The definitions a run's node id names: its last component ("encoder/backbone.0.attn" ->
/// "attn"), kept to the class of its parent component when the parent's type is a class in the
/// same file, else wherever that name is defined; a top-level id ("fc1") skips definitions in
/// classes the file builds as attributes when others remain. A last component that is a number
/// (a Sequential index) names nothing.
std::vector<const SourceDefinition*> definitions_of(const std::string& node,
                                                    const std::vector<SourceDefinition>& defs);

/// The language of a document from its LSP languageId, else its file name;
/// false for others.
bool source_language(const std::string& language_id, const std::string& uri, SourceLanguage& out);

}  // namespace gradscope::cli
