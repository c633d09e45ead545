#include "fashion_mnist.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ATen.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "gradscope/core/error.h"

namespace gradscope::scenarios {

Idx read_idx(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error("cannot open Fashion-MNIST file '" + path + "': " + std::strerror(errno) +
                " (run scripts/fetch-data.sh fashion-mnist, or set GRADSCOPE_DATA_DIR)");
  auto be32 = [&](const char* what) {
    unsigned char b[4];
    if (!in.read(reinterpret_cast<char*>(b), 4)) throw Error("IDX file '" + path + "': truncated " + what);
    return (static_cast<int64_t>(b[0]) << 24) | (b[1] << 16) | (b[2] << 8) | b[3];
  };
  const int64_t magic = be32("header");
  const int64_t ndim = magic & 0xff;
  if ((magic >> 8) != 0x08 || ndim < 1 || ndim > 4)
    throw Error("IDX file '" + path + "': magic number " + std::to_string(magic) + " is not unsigned-byte IDX");
  Idx idx;
  int64_t n = 1;
  for (int64_t i = 0; i < ndim; ++i) {
    idx.dims.push_back(be32("dimension"));
    if (idx.dims.back() < 1 || idx.dims.back() > (int64_t{1} << 24))
      throw Error("IDX file '" + path + "': dimension " + std::to_string(idx.dims.back()) + " is out of range");
    n *= idx.dims.back();
  }
  idx.data.resize(static_cast<std::size_t>(n));
  if (!in.read(reinterpret_cast<char*>(idx.data.data()), n))
    throw Error("IDX file '" + path + "': " + std::to_string(in.gcount()) + " of " + std::to_string(n) + " data bytes");
  if (in.peek() != std::char_traits<char>::eof()) throw Error("IDX file '" + path + "': bytes after the data");
  return idx;
}

namespace {

std::pair<at::Tensor, at::Tensor> split(const std::string& dir, const std::string& prefix) {
  const std::string ip = dir + "/" + prefix + "-images-idx3-ubyte", lp = dir + "/" + prefix + "-labels-idx1-ubyte";
  Idx images = read_idx(ip), labels = read_idx(lp);
  if (images.dims.size() != 3 || images.dims[1] != 28 || images.dims[2] != 28)
    throw Error("Fashion-MNIST file '" + ip + "': expected n x 28 x 28 images");
  if (labels.dims.size() != 1 || labels.dims[0] != images.dims[0])
    throw Error("Fashion-MNIST file '" + lp + "': " + std::to_string(labels.dims[0]) + " labels for " +
                std::to_string(images.dims[0]) + " images");
  for (uint8_t l : labels.data)
    if (l > 9) throw Error("Fashion-MNIST file '" + lp + "': label " + std::to_string(l) + " is not 0..9");
  const int64_t n = images.dims[0];
  at::Tensor x = at::from_blob(images.data.data(), {n, 784}, at::kByte).to(at::kFloat).div(255.0);
  at::Tensor y = at::from_blob(labels.data.data(), {n}, at::kByte).to(at::kLong);
  return {x, y};
}

}  // namespace

cli::Digits load_fashion_mnist(const std::string& dir, int64_t train_rows, uint64_t seed) {
  auto [x, y] = split(dir, "train");
  auto [xt, yt] = split(dir, "t10k");
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const at::Tensor order = at::randperm(x.size(0), gen, at::TensorOptions().dtype(at::kLong));
  const int64_t n = train_rows > 0 ? std::min(train_rows, x.size(0)) : x.size(0);
  x = x.index_select(0, order.narrow(0, 0, n));
  y = y.index_select(0, order.narrow(0, 0, n));
  const at::Tensor mean = x.mean(), std = x.std();
  return cli::Digits{(x - mean) / std, y, (xt - mean) / std, yt};
}

}  // namespace gradscope::scenarios
