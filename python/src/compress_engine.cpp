// apply_recipe and profile_model over a shell of the PyTorch model (shared tensors).
#include "compress_engine.h"

namespace gradscope::python {
namespace {
const char* const kWho = "compress: model: ";
}  // namespace

compress::Applied apply_recipe(const NodeSpec& model, const compress::Recipe& recipe, const compress::InputGrams& grams) {
  const std::shared_ptr<::torch::nn::Module> shell = build_shell(model, kWho);
  return compress::apply(*shell, recipe, grams);
}

std::vector<compress::NodeProfile> profile_model(const NodeSpec& model, const AuditEngine& audit, int64_t batch,
                                                 bool chain) {
  const std::shared_ptr<::torch::nn::Module> shell = build_shell(model, kWho);
  compress::ProfileOptions options;
  options.chain = chain;
  return compress::profile_model(*shell, audit.node_ids(), audit.records(), audit.channel_records(), batch, options);
}

}  // namespace gradscope::python
