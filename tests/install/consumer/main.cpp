// A user's program against an installed gradscope.
#include <ATen/Functions.h>

#include <iostream>
#include <vector>

#include "gradscope/core/audit/rules.h"
#include "gradscope/io/render/json.h"
#include "gradscope/torch/tensor.h"

int main() {
  std::vector<float> g = {3, 4};
  const gradscope::Stats s =
      gradscope::compute(gradscope::TensorView::contiguous(g.data(), gradscope::DType::kFloat32, {2}));
  const gradscope::Stats t = gradscope::torch::stats_of(at::ones({4}), "ones");
  std::vector<float> tiny = {1e-12f};
  gradscope::Record r{0, "fc", gradscope::Site::kParamGrad,
                      gradscope::compute(gradscope::TensorView::contiguous(tiny.data(), gradscope::DType::kFloat32, {1}))};
  const gradscope::Report report = gradscope::build_report({r});
  if (gradscope::render_json(report).find("VANISHING") == std::string::npos) return 1;
  std::cout << "l2=" << s.l2() << " torch_l2=" << t.l2() << " report=" << report.nodes[0].flags.join() << "\n";
  return 0;
}
