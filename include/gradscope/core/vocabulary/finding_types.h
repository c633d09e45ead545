// The type names of the findings that rules below core/findings make (embedding, flow, loss
// scale, loss series): text in the vocabulary every domain folder may include, so that a rule
// names its finding without including the findings folder above it. findings/kinds.h lists
// every kind's types from these.
#pragma once

namespace gradscope {

/// The embedding rules' finding types (EmbeddingDiagnostic::type).
inline constexpr const char* kZombieRows = "ZOMBIE_ROWS";
inline constexpr const char* kDeadRows = "DEAD_ROWS";
inline constexpr const char* kPopularityBias = "POPULARITY_BIAS";
inline constexpr const char* kNegativeSamplerSkew = "NEGATIVE_SAMPLER_SKEW";
inline constexpr const char* kRepresentationCollapse = "REPRESENTATION_COLLAPSE";
/// The flow and loss-scale findings' types.
inline constexpr const char* kGradientFlow = "GRADIENT_FLOW";
inline constexpr const char* kLossScaleOverflow = "LOSS_SCALE_OVERFLOW";
/// The loss series' finding types (core/series/rules.h).
inline constexpr const char* kLossSpike = "LOSS_SPIKE";
inline constexpr const char* kDivergence = "DIVERGENCE";
inline constexpr const char* kLossOutOfRange = "LOSS_OUT_OF_RANGE";

}  // namespace gradscope
