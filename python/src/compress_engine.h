// Compression from Python: the C++ recipe rule and compress::apply over a PyTorch model's own
// parameters. The model reaches C++ as a NodeSpec of all its modules and parameters; the shell
// built from it shares PyTorch's tensors, so apply() changes them in place.
//
//   gradscope::python::NodeSpec model{"model", "Sequential", modules, params};
//   auto nodes = gradscope::python::profile_model(model, engine, /*batch=*/64, /*chain=*/true);
//   auto recipe = gradscope::compress::make_recipe(nodes, gradscope::compress::Budget::bytes(8000));
//   gradscope::compress::Applied a = gradscope::python::apply_recipe(model, recipe);  // a.bytes
#pragma once

#include <cstdint>
#include <vector>

#include "engine.h"
#include "gradscope/core/compress/recipe.h"
#include "gradscope/torch/compress/apply_recipe.h"

namespace gradscope::python {

/// compress::apply on `model`'s parameters, in place, rounding the nodes `grams` covers by GPTQ.
/// Throws Error as compress::apply does (naming the recipe's nodes the model lacks) before
/// changing anything.
compress::Applied apply_recipe(const NodeSpec& model, const compress::Recipe& recipe, const compress::InputGrams& grams = {});

/// compress::profile_model of `model` from what `audit` kept (its node ids, records and
/// channel records; also after close()).
std::vector<compress::NodeProfile> profile_model(const NodeSpec& model, const AuditEngine& audit, int64_t batch,
                                                 bool chain);

}  // namespace gradscope::python
