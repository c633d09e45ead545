// Record: one (step, node, site) summary, the contract between measuring and judging.
//
//   gradscope::Record r{step, "encoder/fc1", gradscope::Site::kParamGrad, gradscope::compute(g)};
//   builder.add(r);                       // see report.h
#pragma once

#include <cstdint>
#include <string>

#include "gradscope/core/stats.h"

namespace gradscope {

/// Where in training a tensor was measured.
enum class Site : uint8_t {
  kActivation,     ///< a node's forward output
  kOutputGrad,     ///< gradient flowing into a node's output from the next node
  kParamGrad,      ///< accumulated gradients of the node's parameters
  kParam,          ///< the parameters themselves
  kUpdate,         ///< actual parameter change across the optimizer step
  kEmbeddingRows,  ///< touched rows of an embedding table
  kFrozenParam,    ///< parameters that do not require gradients
  kPreActivation,  ///< output of a node's own module before the parameter-free ones after it
};
inline constexpr int kSiteCount = 8;

/// snake_case name of a site ("param_grad", ...).
const char* site_name(Site site);

/// One measured summary. Several records with the same (step, node, site) merge into one.
struct Record {
  int64_t step = 0;
  std::string node;  ///< hierarchical id, e.g. "encoder/backbone.0.attn"
  Site site = Site::kParamGrad;
  Stats stats;
};

}  // namespace gradscope
