// RankMerge's buffer: Stats in and out of int64 words, the per-slot merge, and the names of
// what differs when ranks disagree on their nodes.
#include "distributed/wire.h"

#include <cstring>
#include <map>
#include <sstream>

namespace gradscope::torch::internal {

int64_t double_bits(double x) {
  int64_t w;
  std::memcpy(&w, &x, sizeof w);
  return w;
}

double bits_double(int64_t w) {
  double x;
  std::memcpy(&x, &w, sizeof x);
  return x;
}

namespace {

bool parameter_site(Site site) {
  return site == Site::kParamGrad || site == Site::kParam || site == Site::kFrozenParam || site == Site::kUpdate;
}

// "id: description" lines of one rank's text, by id, and the ids in order.
std::map<std::string, std::string> parse(const std::string& text, std::vector<std::string>& ids) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const std::size_t colon = line.find(": ");
    const std::string id = line.substr(0, colon);
    ids.push_back(id);
    out[id] = colon == std::string::npos ? "" : line.substr(colon + 2);
  }
  return out;
}

}  // namespace

void pack(const Stats& s, int64_t* w) {
  w[0] = 1;
  pack_fields<kStatsFields>(s, w + 1);
}

Stats unpack(const int64_t* w) { return unpack_fields<kStatsFields>(w + 1); }

bool has_nonfinite(const int64_t* w) {
  if (w[0] == 0) return false;
  const Stats s = unpack(w);
  return s.nan > 0 || s.pos_inf > 0 || s.neg_inf > 0;
}

bool merge_slot(const std::vector<const int64_t*>& ranks, std::size_t slot, Site site, Stats& out, bool sharded,
                bool share_batch) {
  const std::size_t offset = slot * kSlotWords;
  bool any = false, everywhere = true, same = true;
  for (const int64_t* r : ranks) {
    const int64_t* w = r + offset;
    if (w[0] == 0) {
      everywhere = false;
      continue;
    }
    same = same && std::memcmp(w, ranks.front() + offset, kSlotWords * sizeof(int64_t)) == 0;
    out = any ? merge(out, unpack(w)) : unpack(w);
    any = true;
  }
  // Averaged gradients (and the parameters and updates they make) are one tensor held N
  // times: counting it N times would multiply its counts and sums by N.
  const bool once_when_same = parameter_site(site) ? !sharded : share_batch;
  if (any && everywhere && same && once_when_same) out = unpack(ranks.front() + offset);
  return any;
}

uint64_t hash_nodes(const std::vector<std::string>& nodes, const std::vector<std::string>& descriptions) {
  uint64_t h = 1469598103934665603ull;
  const auto add = [&](const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;  // separator: ("ab","c") != ("a","bc")
  };
  for (std::size_t i = 0; i < nodes.size(); ++i) add(nodes[i]), add(descriptions[i]);
  return h;
}

std::string join_nodes(const std::vector<std::string>& nodes, const std::vector<std::string>& descriptions) {
  std::string out;
  for (std::size_t i = 0; i < nodes.size(); ++i) out += nodes[i] + ": " + descriptions[i] + "\n";
  return out;
}

std::string describe_difference(const std::vector<std::string>& texts) {
  for (std::size_t r = 1; r < texts.size(); ++r) {
    if (texts[r] == texts[0]) continue;
    std::vector<std::string> ids0, ids;
    const auto zero = parse(texts[0], ids0);
    const auto other = parse(texts[r], ids);
    const std::string rank = "rank " + std::to_string(r);
    std::string out;
    const auto add = [&](const std::string& part) { out += (out.empty() ? "" : "; ") + part; };
    for (const std::string& id : ids0)
      if (!other.count(id)) add(rank + " lacks '" + id + "' (" + zero.at(id) + ") of rank 0");
    for (const std::string& id : ids)
      if (!zero.count(id)) add(rank + " has '" + id + "' (" + other.at(id) + ") that rank 0 lacks");
    for (const std::string& id : ids0)
      if (other.count(id) && other.at(id) != zero.at(id))
        add("'" + id + "' is " + zero.at(id) + " on rank 0 but " + other.at(id) + " on " + rank);
    if (out.empty()) out = "the same nodes in another order on " + rank;
    return out;
  }
  return "the node lists hash differently but read the same";
}

}  // namespace gradscope::torch::internal
