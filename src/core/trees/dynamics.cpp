// analyze_tree_dynamics: checks that the data fits the model, then runs the steps of
// trees/internal/parts.h in order; and the records a tree run stores per round.
#include "gradscope/core/trees/dynamics.h"

#include "gradscope/core/error.h"
#include "trees/internal/parts.h"

namespace gradscope {
namespace {

void check_data(const TreeEnsemble& model, const TreeData& d, const std::string& what) {
  if (d.rows == 0) throw Error(what + ": no rows");
  if (d.cols != static_cast<std::size_t>(model.num_features))
    throw Error(what + ": " + std::to_string(d.cols) + " feature columns, the model has " +
                std::to_string(model.num_features) + " features");
  if (d.x.size() != d.rows * d.cols)
    throw Error(what + ": " + std::to_string(d.x.size()) + " values for " + std::to_string(d.rows) +
                " rows of " + std::to_string(d.cols));
  if (d.labelled() && d.y.size() != d.rows)
    throw Error(what + ": " + std::to_string(d.y.size()) + " labels for " + std::to_string(d.rows) +
                " rows");
}

// The model's names, else the data's (they describe the same columns), else f0, f1, ...
std::vector<std::string> names_for(const TreeEnsemble& model, const TreeDynamicsInput& in) {
  const std::size_t n = static_cast<std::size_t>(model.num_features);
  if (model.feature_names.size() == n) return model.feature_names;
  for (const TreeData* d : {in.reference, in.validation})
    if (d && d->names.size() == n) return d->names;
  std::vector<std::string> out;
  for (std::size_t f = 0; f < n; ++f) out.push_back(model.feature_name(static_cast<int32_t>(f)));
  return out;
}

}  // namespace

const char* tree_flag_name(TreeFlag flag) { return tree_flag_info(flag).name; }

bool TreeFinding::tentative() const { return confidence < kTreeConfident; }  // NaN: false

bool TreeDynamicsReport::healthy() const {
  for (const TreeFinding& f : findings)
    if (!f.tentative()) return false;
  return true;
}

const std::string& TreeDynamicsReport::feature_name(int32_t f) const {
  static const std::string unknown = "?";
  return f >= 0 && static_cast<std::size_t>(f) < feature_names.size()
             ? feature_names[static_cast<std::size_t>(f)]
             : unknown;
}

TreeDynamicsReport analyze_tree_dynamics(const TreeEnsemble& model, const TreeDynamicsInput& in,
                                         const TreeThresholds& thresholds) {
  thresholds.validate();
  if (in.reference) check_data(model, *in.reference, "data");
  if (in.validation) {
    check_data(model, *in.validation, "validation data");
    if (!in.validation->labelled())
      throw Error("validation data: no labels (the validation loss needs them)");
  }
  TreeDynamicsReport r;
  r.thresholds = thresholds;
  r.dialect = dialect_name(model.dialect);
  r.objective = model.objective;
  r.booster = model.booster;
  r.rounds = model.rounds;
  r.outputs = model.num_outputs;
  r.num_features = model.num_features;
  r.trees_per_round = model.trees_per_round();
  r.feature_names = names_for(model, in);
  r.loss = tree_loss_of(model);
  if (in.reference) {
    r.reference_rows = static_cast<int64_t>(in.reference->rows);
    r.reference_labels = in.reference->labelled();
    check_tree_labels(model, r.loss, *in.reference, "data");
  }
  if (in.validation) {
    r.validation_rows = static_cast<int64_t>(in.validation->rows);
    r.validation_labels = true;
    check_tree_labels(model, r.loss, *in.validation, "validation data");
  }
  tree_internal::measure_model(model, r);
  tree_internal::measure_data(model, in, r);
  tree_internal::measure_windows(r);
  tree_internal::judge_trees(r);
  // The pairs are filtered and tested on the rows given, labelled ones first.
  const TreeData* rows = in.reference && in.reference->labelled() ? in.reference
                         : in.validation                          ? in.validation
                                                                  : in.reference;
  r.interactions = suggest_interactions(model, rows, thresholds);
  if (rows && rows->labelled() && (r.loss == TreeLoss::kLogLoss || r.loss == TreeLoss::kRmse))
    test_interactions(r.interactions, *rows,
                      r.loss == TreeLoss::kLogLoss ? InteractionModel::kLogistic
                                                   : InteractionModel::kLeastSquares);
  return r;
}

std::vector<Record> tree_round_records(const TreeDynamicsReport& report, std::size_t round) {
  const RoundDynamics& r = report.per_round.at(round);
  const int64_t step = r.round;
  std::vector<Record> out;
  for (std::size_t c = 0; c < r.leaf_values.size(); ++c) {
    const std::string node =
        r.leaf_values.size() == 1 ? "trees" : "trees/class" + std::to_string(c);
    if (c < r.outputs.size()) out.push_back({step, node, Site::kRoundOutput, r.outputs[c]});
    out.push_back({step, node, Site::kLeafValue, r.leaf_values[c]});
  }
  if (report.has_gain)
    for (const FeatureSplits& f : r.features)
      out.push_back(
          {step, "features/" + report.feature_name(f.feature), Site::kSplitGain, f.gains});
  if (r.train_row_loss.count > 0)
    out.push_back({step, "loss/train", Site::kRowLoss, r.train_row_loss});
  if (r.valid_row_loss.count > 0)
    out.push_back({step, "loss/valid", Site::kRowLoss, r.valid_row_loss});
  return out;
}

}  // namespace gradscope
