#include "compression_mf.h"

#include <ATen/ATen.h>

#include "gradscope/core/compress/rows.h"
#include "gradscope/torch/compress/apply_recipe.h"
#include "matrix_factorization.h"
#include "ranking.h"

namespace gradscope::scenarios {
namespace {

using namespace compress;

struct Tables {
  at::Tensor user, item;
};

MfMeasured rank_with(const Interactions& data, const Tables& trained, const RowRecipe& user, const RowRecipe& item,
                     const std::string& budget, int64_t top_k) {
  at::Tensor u = trained.user.clone(), i = trained.item.clone();
  MfMeasured m;
  m.method = user.method;
  m.budget = budget;
  m.bytes = apply_rows(u, user) + apply_rows(i, item);
  const Ranking r = rank_held_out(data, u, i, top_k);
  m.hr = r.hr;
  m.ndcg = r.ndcg;
  m.user_hr = r.user_hr;
  for (const RowRecipe* t : {&user, &item})
    for (uint8_t l : t->level) m.merged_rows += l == kRowMerged;
  return m;
}

}  // namespace

std::vector<MfMeasured> compare_mf_methods(const Interactions& data, uint64_t seed, int epochs) {
  MfOptions opt;
  opt.seed = seed;
  opt.epochs = epochs;
  Tables trained;
  opt.on_epoch = [&](int epoch, const at::Tensor& u, const at::Tensor& i) {
    if (epoch == epochs) trained = {u.detach().clone(), i.detach().clone()};
  };
  const MfRun run = train_matrix_factorization(data, opt);
  RowProfile pu = row_profile("user", trained.user, run.rows[0]);
  RowProfile pi = row_profile("item", trained.item, run.rows[1]);
  // Merge candidates ride along in the profile; only RowRuleOptions::merge uses them.
  add_merge_candidates(pu, trained.user);
  add_merge_candidates(pi, trained.item);
  std::vector<MfMeasured> out;
  {
    const Ranking r = rank_held_out(data, trained.user, trained.item, opt.top_k);
    out.push_back({"fp32", "fp32", uniform_row_recipe(pu, kRowFp32).bytes + uniform_row_recipe(pi, kRowFp32).bytes,
                   r.hr, r.ndcg, r.user_hr});
  }
  auto norms = [](const RowProfile& p) { return p.sum_sq; };
  auto lookups = [](const RowProfile& p) { return p.lookups; };
  // At the size of each uniform per-row precision (INT2 is about half of INT4's bytes).
  for (const RowLevel level : {kRowInt8, kRowInt4, kRowInt3, kRowInt2}) {
    const std::string name = row_level_name(level);
    RowRecipe bu = uniform_row_recipe(pu, level), bi = uniform_row_recipe(pi, level);
    out.push_back(rank_with(data, trained, bu, bi, name, opt.top_k));
    const int64_t su = bu.bytes, si = bi.bytes;
    out.push_back(rank_with(data, trained, make_row_recipe(pu, su), make_row_recipe(pi, si), name, opt.top_k));
    out.push_back(rank_with(data, trained, make_row_recipe(pu, su, RowRuleOptions{false}),
                            make_row_recipe(pi, si, RowRuleOptions{false}), name, opt.top_k));
    out.push_back(rank_with(data, trained, make_row_recipe(pu, su, RowRuleOptions{true, true}),
                            make_row_recipe(pi, si, RowRuleOptions{true, true}), name, opt.top_k));
    out.push_back(rank_with(data, trained, prune_row_recipe(pu, norms(pu), kRowInt8, su, "magnitude"),
                            prune_row_recipe(pi, norms(pi), kRowInt8, si, "magnitude"), name, opt.top_k));
    out.push_back(rank_with(data, trained, prune_row_recipe(pu, lookups(pu), kRowInt8, su, "frequency"),
                            prune_row_recipe(pi, lookups(pi), kRowInt8, si, "frequency"), name, opt.top_k));
  }
  return out;
}

}  // namespace gradscope::scenarios
