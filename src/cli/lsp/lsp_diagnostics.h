// What the language server says about one source file: a diagnostic at each
// definition of a node with a finding, and the hover text of a node (its flags
// and their evidence). The texts are the findings' own (core/findings/findings.h);
// nothing here writes advice of its own.
//
//   auto defs = gradscope::cli::index_source(text,
//   gradscope::cli::SourceLanguage::kCpp); nlohmann::json diags =
//   gradscope::cli::diagnostics_json(run, defs); std::optional<std::string> md
//   = gradscope::cli::hover_markdown(run, defs, line, column);
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gradscope/core/findings/findings.h"
#include "lsp_run.h"
#include "lsp_source_index.h"

namespace gradscope::cli {

/// LSP DiagnosticSeverity: 1 Error, 2 Warning, 3 Information.
int diagnostic_severity(const Finding& finding);

/// "VANISHING (encoder/fc1): <premise>\nWhat to do: <action>".
std::string diagnostic_message(const Finding& finding);

/// The Diagnostic[] of publishDiagnostics for a file with definitions `defs`:
/// one per finding per definition of its node, in source order. Findings
/// without a node (gradient flow) or whose node is not defined in the file give
/// none.
nlohmann::json diagnostics_json(const LspRun& run, const std::vector<SourceDefinition>& defs);

/// Markdown for the run's nodes defined at (line, UTF-16 column): each node's
/// flags, with premise, what to do and the evidence table, or that it is
/// healthy; nullopt when no node of the run is defined there.
std::optional<std::string> hover_markdown(const LspRun& run,
                                          const std::vector<SourceDefinition>& defs, int line,
                                          int column);

}  // namespace gradscope::cli
