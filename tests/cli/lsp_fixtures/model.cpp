// A model for the language server tests: register_module, a named Sequential, and fc1 in the
// encoder (the run's "encoder/fc1"). A braced list outside a Sequential is not a definition.
#include <torch/torch.h>

#include <map>
#include <string>

struct EncoderImpl : torch::nn::Module {
  EncoderImpl() { fc1 = register_module("fc1", torch::nn::Linear(8, 16)); }
  torch::nn::Linear fc1{nullptr};
};
TORCH_MODULE(Encoder);

struct Net : torch::nn::Module {
  Net() {
    encoder = register_module("encoder", Encoder());
    head = register_module("head", torch::nn::Sequential({{"proj", torch::nn::Linear(16, 4)},
                                                          {"out", torch::nn::Softmax(1)}}));
    gate = register_module("gate", torch::nn::Sigmoid());
  }
  Encoder encoder{nullptr};
  torch::nn::Sequential head{nullptr};
  torch::nn::Sigmoid gate{nullptr};
  std::map<std::string, int> unrelated{{"proj", 1}};
};
