#include "trees/internal/codec.h"

#include <algorithm>
#include <climits>
#include <cmath>

#include "gradscope/core/error.h"
#include "internal/json_field.h"

namespace gradscope::internal {
namespace {

using Json = nlohmann::ordered_json;

Json num(double v) { return std::isfinite(v) ? Json(v) : Json(); }

// Every per-round number, by name, and what a reader may accept for it.
enum class Range { kAny, kNonNegative };
struct RoundDouble {
  const char* name;
  double RoundDynamics::*member;
  Range range;
};
constexpr RoundDouble kRoundDoubles[] = {
    {"leaf_mean_abs", &RoundDynamics::leaf_mean_abs, Range::kNonNegative},
    {"leaf_max_abs", &RoundDynamics::leaf_max_abs, Range::kNonNegative},
    {"gain", &RoundDynamics::gain, Range::kAny},
    {"cover", &RoundDynamics::cover, Range::kNonNegative},
    {"contribution", &RoundDynamics::contribution, Range::kNonNegative},
    {"contribution_max", &RoundDynamics::contribution_max, Range::kNonNegative},
    {"velocity", &RoundDynamics::velocity, Range::kNonNegative},
    {"train_loss", &RoundDynamics::train_loss, Range::kNonNegative},
    {"valid_loss", &RoundDynamics::valid_loss, Range::kNonNegative},
};
struct RoundInt {
  const char* name;
  int32_t RoundDynamics::*member;
};
constexpr RoundInt kRoundInts[] = {{"trees", &RoundDynamics::trees},
                                   {"leaves", &RoundDynamics::leaves},
                                   {"max_depth", &RoundDynamics::max_depth}};

// A threshold written after version 1 of the document: absent from older files, where the
// default stands.
bool threshold_added_later(const char* name) { return std::string(name) == "overfit_large_rise"; }

Json pair_to_json(const InteractionPair& p) {
  return {{"a", p.a},
          {"b", p.b},
          {"gain", num(p.gain)},
          {"share", p.share},
          {"count", p.count},
          {"trees", p.trees},
          {"correlation", num(p.correlation)},
          {"vif", num(p.vif)},
          {"cv_gain", num(p.cv_gain)},
          {"p_value", num(p.p_value)}};
}

Json report_to_json(const TreeDynamicsReport& r) {
  Json thresholds = Json::object();
  // Whole numbers first, then the rest: the order of the documents written so far.
  for (const auto& f : tree_threshold_fields())
    if (f.is_integer()) thresholds[f.name] = r.thresholds.*(f.integer);
  for (const auto& f : tree_threshold_fields())
    if (!f.is_integer()) thresholds[f.name] = r.thresholds.*(f.real);
  Json rounds = Json::object();
  for (const auto& f : kRoundInts) {
    Json a = Json::array();
    for (const RoundDynamics& d : r.per_round) a.push_back(d.*(f.member));
    rounds[f.name] = a;
  }
  for (const auto& f : kRoundDoubles) {
    Json a = Json::array();
    for (const RoundDynamics& d : r.per_round) a.push_back(num(d.*(f.member)));
    rounds[f.name] = a;
  }
  Json features = Json::array();
  for (const RoundDynamics& d : r.per_round) {
    Json round = Json::array();
    for (const FeatureSplits& f : d.features) round.push_back({f.feature, f.splits, num(f.gain)});
    features.push_back(round);
  }
  rounds["features"] = features;
  Json windows = Json::array(), totals = Json::array(), findings = Json::array();
  for (const WindowDynamics& w : r.windows)
    windows.push_back({{"first_round", w.first_round},
                       {"last_round", w.last_round},
                       {"contribution", num(w.contribution)},
                       {"leaf_mean_abs", num(w.leaf_mean_abs)},
                       {"velocity", num(w.velocity)},
                       {"hhi", num(w.hhi)},
                       {"top_feature", w.top_feature},
                       {"top_share", num(w.top_share)},
                       {"drift", num(w.drift)},
                       {"train_loss", num(w.train_loss)},
                       {"valid_loss", num(w.valid_loss)}});
  for (const FeatureTotal& f : r.features)
    totals.push_back({{"feature", f.feature},
                      {"splits", f.splits},
                      {"gain", num(f.gain)},
                      {"share", f.share},
                      {"first_round", f.first_round}});
  for (const TreeFinding& f : r.findings)
    findings.push_back({{"flag", tree_flag_name(f.flag)},
                        {"first_round", f.first_round},
                        {"value", num(f.value)},
                        {"threshold", num(f.threshold)},
                        {"measure", f.measure},
                        {"detail", f.detail},
                        {"advice", f.advice},
                        {"feature", f.feature},
                        {"confidence", num(f.confidence)}});
  Json kept = Json::array(), dropped = Json::array(), no_evidence = Json::array(),
       merged = Json::array();
  for (const InteractionPair& p : r.interactions.merged) merged.push_back(pair_to_json(p));
  for (const InteractionPair& p : r.interactions.kept) kept.push_back(pair_to_json(p));
  for (const InteractionPair& p : r.interactions.dropped) dropped.push_back(pair_to_json(p));
  for (const InteractionPair& p : r.interactions.no_evidence)
    no_evidence.push_back(pair_to_json(p));
  return {{"model",
           {{"dialect", r.dialect},
            {"objective", r.objective},
            {"booster", r.booster},
            {"rounds", r.rounds},
            {"outputs", r.outputs},
            {"features", r.num_features},
            {"trees_per_round", r.trees_per_round},
            {"feature_names", r.feature_names},
            {"has_gain", r.has_gain},
            {"has_cover", r.has_cover}}},
          {"data",
           {{"loss", tree_loss_name(r.loss)},
            {"reference_rows", r.reference_rows},
            {"validation_rows", r.validation_rows},
            {"reference_labels", r.reference_labels},
            {"validation_labels", r.validation_labels},
            {"base_train_loss", num(r.base_train_loss)},
            {"base_valid_loss", num(r.base_valid_loss)},
            {"best_valid_rounds", r.best_valid_rounds},
            {"valid_rise_z", num(r.valid_rise_z)},
            {"valid_rise_confidence", num(r.valid_rise_confidence)},
            {"valid_rise_rows", r.valid_rise_rows},
            {"valid_errors_best", r.valid_errors_best},
            {"valid_errors_last", r.valid_errors_last}}},
          {"thresholds", thresholds},
          {"window", r.window},
          {"rounds", rounds},
          {"windows", windows},
          {"features", totals},
          {"findings", findings},
          {"not_judged", r.not_judged},
          {"interactions",
           {{"by_gain", r.interactions.by_gain},
            {"filtered", r.interactions.filtered},
            {"pairs", r.interactions.pairs},
            {"kept", kept},
            {"dropped", dropped},
            {"tested", r.interactions.tested},
            {"test_rows", r.interactions.test_rows},
            {"no_evidence", no_evidence},
            {"merged", merged}}}};
}

// ---- reading: every value checked where it is read ----

bool boolean(const Field& f) {
  if (!f.json().is_boolean()) f.fail("must be true or false, got " + shown(f.json()));
  return f.json().get<bool>();
}

// An integer in [lo, hi] (signed: -1 marks "none" in several fields).
int32_t index_in(const Field& f, int64_t lo, int64_t hi) {
  const Json& v = f.json();
  const bool integer = v.is_number_integer() || v.is_number_unsigned();
  const bool fits = v.is_number_unsigned() ? v.get<uint64_t>() <= static_cast<uint64_t>(hi)
                                           : integer && v.get<int64_t>() <= hi;
  if (!integer || !fits || (!v.is_number_unsigned() && v.get<int64_t>() < lo))
    f.fail("must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
           ", got " + shown(v));
  return static_cast<int32_t>(v.get<int64_t>());
}

int32_t int32_count(const Field& f) { return index_in(f, 0, INT32_MAX); }

double ranged(const Field& f, Range range) {
  return range == Range::kNonNegative ? f.number_from(0) : f.number();
}

TreeThresholds thresholds_from(const Field& j) {
  TreeThresholds t;
  for (const auto& f : tree_threshold_fields()) {
    if (f.is_integer()) t.*(f.integer) = index_in(j.at(f.name), INT_MIN, INT_MAX);
    else if (!threshold_added_later(f.name) || j.has(f.name)) t.*(f.real) = j.at(f.name).finite();
  }
  try {
    t.validate();
  } catch (const Error& e) {
    j.fail(e.what());
  }
  return t;
}

// A pair (a < b), or a merge (`merge`: feature a merged into b, any order, a != b).
InteractionPair pair_from(const Field& j, int32_t features, bool merge = false) {
  InteractionPair p;
  p.a = index_in(j.at("a"), 0, features - 1);
  p.b = index_in(j.at("b"), 0, features - 1);
  if (merge && p.a == p.b) j.at("b").fail("must differ from a (" + std::to_string(p.a) + ")");
  if (!merge && p.a >= p.b) j.at("b").fail("must be above a (" + std::to_string(p.a) + ")");
  p.gain = j.at("gain").number();
  p.share = j.at("share").number_in(0, 1);
  p.count = j.at("count").count();
  p.trees = j.at("trees").count();
  p.correlation = j.at("correlation").number_in(-1, 1);
  p.vif = j.at("vif").number_from(1);
  if (j.has("cv_gain")) {  // version 2
    p.cv_gain = j.at("cv_gain").number();
    p.p_value = j.at("p_value").number_in(0, 1);
  }
  return p;
}

void model_from(const Field& j, TreeDynamicsReport& r) {
  r.dialect = j.at("dialect").string();
  if (r.dialect != "xgboost" && r.dialect != "lightgbm" && r.dialect != "catboost")
    j.at("dialect").fail("must be xgboost, lightgbm or catboost");
  r.objective = j.at("objective").string();
  r.booster = j.at("booster").string();
  r.rounds = int32_count(j.at("rounds"));
  r.outputs = index_in(j.at("outputs"), 1, INT32_MAX);
  r.num_features = int32_count(j.at("features"));
  r.trees_per_round = int32_count(j.at("trees_per_round"));
  const Field names = j.at("feature_names");
  if (names.size() != static_cast<std::size_t>(r.num_features))
    names.fail(std::to_string(names.size()) + " names for " + std::to_string(r.num_features) +
               " features");
  for (std::size_t i = 0; i < names.size(); ++i)
    r.feature_names.push_back(names.element(i).string());
  r.has_gain = boolean(j.at("has_gain"));
  r.has_cover = boolean(j.at("has_cover"));
}

void data_from(const Field& j, TreeDynamicsReport& r) {
  const std::string loss = j.at("loss").string();
  bool known = false;
  for (const TreeLoss l :
       {TreeLoss::kNone, TreeLoss::kLogLoss, TreeLoss::kMLogLoss, TreeLoss::kRmse})
    if (loss == tree_loss_name(l)) {
      r.loss = l;
      known = true;
    }
  if (!known) j.at("loss").fail("must be \"\", logloss, mlogloss or rmse");
  r.reference_rows = j.at("reference_rows").count();
  r.validation_rows = j.at("validation_rows").count();
  r.reference_labels = boolean(j.at("reference_labels"));
  r.validation_labels = boolean(j.at("validation_labels"));
  r.base_train_loss = j.at("base_train_loss").number_from(0);
  r.base_valid_loss = j.at("base_valid_loss").number_from(0);
  r.best_valid_rounds = index_in(j.at("best_valid_rounds"), -1, r.rounds);
  r.valid_rise_z = j.at("valid_rise_z").number();
  if (!j.has("valid_rise_confidence")) return;  // version 1
  r.valid_rise_confidence = j.at("valid_rise_confidence").number_in(0, 1);
  const int64_t rows = std::min<int64_t>(r.validation_rows, INT32_MAX);
  r.valid_rise_rows = index_in(j.at("valid_rise_rows"), -1, rows);
  r.valid_errors_best = index_in(j.at("valid_errors_best"), -1, rows);
  r.valid_errors_last = index_in(j.at("valid_errors_last"), -1, rows);
}

void rounds_from(const Field& j, TreeDynamicsReport& r) {
  r.per_round.assign(static_cast<std::size_t>(r.rounds), RoundDynamics{});
  for (std::size_t i = 0; i < r.per_round.size(); ++i)
    r.per_round[i].round = static_cast<int32_t>(i);
  // Every per-round array holds one entry per round.
  auto column = [&](const char* name) {
    const Field a = j.at(name);
    if (a.size() != r.per_round.size())
      a.fail(std::to_string(a.size()) + " entries for " + std::to_string(r.rounds) + " rounds");
    return a;
  };
  for (const auto& f : kRoundInts) {
    const Field a = column(f.name);
    for (std::size_t i = 0; i < a.size(); ++i)
      r.per_round[i].*(f.member) = int32_count(a.element(i));
  }
  for (const auto& f : kRoundDoubles) {
    const Field a = column(f.name);
    for (std::size_t i = 0; i < a.size(); ++i)
      r.per_round[i].*(f.member) = ranged(a.element(i), f.range);
  }
  const Field features = column("features");
  for (std::size_t i = 0; i < features.size(); ++i) {
    const Field round = features.element(i);
    for (std::size_t k = 0; k < round.size(); ++k) {
      const Field split = round.element(k);
      if (split.size() != 3) split.fail("must be [feature, splits, gain]");
      FeatureSplits s;
      s.feature = index_in(split.element(0), 0, r.num_features - 1);
      s.splits = split.element(1).count();
      s.gain = split.element(2).number();
      if (!r.per_round[i].features.empty() && s.feature <= r.per_round[i].features.back().feature)
        split.element(0).fail("features must ascend within a round");
      r.per_round[i].features.push_back(s);
    }
  }
}

void windows_from(const Field& j, TreeDynamicsReport& r) {
  int32_t next = 0;  // the windows cover the rounds in order, without gaps
  for (std::size_t i = 0; i < j.size(); ++i) {
    const Field w = j.element(i);
    WindowDynamics d;
    d.first_round = index_in(w.at("first_round"), next, next);
    d.last_round = index_in(w.at("last_round"), d.first_round, r.rounds - 1);
    next = d.last_round + 1;
    d.contribution = w.at("contribution").number_from(0);
    d.leaf_mean_abs = w.at("leaf_mean_abs").number_from(0);
    d.velocity = w.at("velocity").number_from(0);
    d.hhi = w.at("hhi").number_in(0, 1);
    d.top_feature = index_in(w.at("top_feature"), -1, r.num_features - 1);
    d.top_share = w.at("top_share").number_in(0, 1);
    d.drift = w.at("drift").number_in(0, 1);
    d.train_loss = w.at("train_loss").number_from(0);
    d.valid_loss = w.at("valid_loss").number_from(0);
    r.windows.push_back(d);
  }
  if (next != r.rounds)
    j.fail("the windows cover rounds 0-" + std::to_string(next - 1) + " of " +
           std::to_string(r.rounds));
}

TreeFlag flag_from(const Field& f) {
  const std::string name = f.string();
  for (int i = 0; i < kTreeFlagCount; ++i)
    if (name == tree_flag_name(static_cast<TreeFlag>(i))) return static_cast<TreeFlag>(i);
  f.fail("is not a tree flag (STAGNANT, OVERFITTING, EXPLODING, CONCENTRATED)");
}

void findings_from(const Field& body, TreeDynamicsReport& r) {
  const Field totals = body.at("features");
  for (std::size_t i = 0; i < totals.size(); ++i) {
    const Field f = totals.element(i);
    FeatureTotal t;
    t.feature = index_in(f.at("feature"), 0, r.num_features - 1);
    t.splits = f.at("splits").count();
    t.gain = f.at("gain").number();
    t.share = f.at("share").number_in(0, 1);
    t.first_round = index_in(f.at("first_round"), -1, r.rounds - 1);
    r.features.push_back(t);
  }
  const Field findings = body.at("findings");
  for (std::size_t i = 0; i < findings.size(); ++i) {
    const Field f = findings.element(i);
    TreeFinding t;
    t.flag = flag_from(f.at("flag"));
    t.first_round = index_in(f.at("first_round"), -1, r.rounds - 1);
    t.value = f.at("value").number();
    t.threshold = f.at("threshold").number();
    t.measure = f.at("measure").string();
    t.detail = f.at("detail").string();
    t.advice = f.at("advice").string();
    t.feature = index_in(f.at("feature"), -1, r.num_features - 1);
    if (f.has("confidence")) t.confidence = f.at("confidence").number_in(0, 1);  // version 2
    r.findings.push_back(t);
  }
  const Field notes = body.at("not_judged");
  for (std::size_t i = 0; i < notes.size(); ++i) r.not_judged.push_back(notes.element(i).string());
  const Field in = body.at("interactions");
  r.interactions.by_gain = boolean(in.at("by_gain"));
  r.interactions.filtered = boolean(in.at("filtered"));
  r.interactions.pairs = in.at("pairs").count();
  const bool tested = in.has("tested");  // version 2
  if (tested) {
    r.interactions.tested = boolean(in.at("tested"));
    r.interactions.test_rows = in.at("test_rows").count();
  }
  for (const char* list : {"kept", "dropped", "no_evidence", "merged"}) {
    if (!tested && std::string(list) == "no_evidence") continue;
    if (!in.has(list) && std::string(list) == "merged") continue;  // written since version 2
    const Field a = in.at(list);
    auto& into = std::string(list) == "kept"          ? r.interactions.kept
                 : std::string(list) == "dropped"     ? r.interactions.dropped
                 : std::string(list) == "no_evidence" ? r.interactions.no_evidence
                                                      : r.interactions.merged;
    for (std::size_t i = 0; i < a.size(); ++i)
      into.push_back(pair_from(a.element(i), r.num_features, &into == &r.interactions.merged));
  }
}

}  // namespace

Json tree_summary_to_json(const TreeRunSummary& s) {
  Json body = {
      {"version", kTreeRunVersion},
      {"inputs",
       {{"model", s.model}, {"data", s.data}, {"validation", s.validation}, {"label", s.label}}}};
  const Json report = report_to_json(s.report);
  for (const auto& [key, value] : report.items()) body[key] = value;
  return {{"gradscope_tree_run", body}};
}

TreeRunSummary tree_summary_from_json(const Json& doc) {
  const Field body = Field(doc).at("gradscope_tree_run");
  const Field version = body.at("version");
  if (version.count() < 1) version.fail("must be at least 1, got " + shown(version.json()));
  if (version.count() > kTreeRunVersion)
    version.fail(std::to_string(version.count()) + " is newer than this gradscope reads (" +
                 std::to_string(kTreeRunVersion) + ")");
  TreeRunSummary s;
  const Field inputs = body.at("inputs");
  s.model = inputs.at("model").string();
  s.data = inputs.at("data").string();
  s.validation = inputs.at("validation").string();
  s.label = inputs.at("label").string();
  TreeDynamicsReport& r = s.report;
  model_from(body.at("model"), r);
  data_from(body.at("data"), r);
  r.thresholds = thresholds_from(body.at("thresholds"));
  r.window = index_in(body.at("window"), r.rounds > 0 ? 1 : 0, r.rounds);
  rounds_from(body.at("rounds"), r);
  windows_from(body.at("windows"), r);
  findings_from(body, r);
  return s;
}

}  // namespace gradscope::internal
