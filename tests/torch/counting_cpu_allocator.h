// A c10::Allocator that counts the bytes of every CPU tensor allocated while it is installed
// (LibTorch's CPU tensors all take their memory from c10::GetCPUAllocator()), so a test can
// measure the peak memory of an ATen computation instead of counting it from the code.
//
//   CountingCpuAllocator counting;            // installed; restores the previous one on exit
//   run();
//   EXPECT_LE(counting.peak_extra(), bound);  // bytes above what was live at construction
#pragma once

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gradscope::torch::test {

class CountingCpuAllocator final : public c10::Allocator {
 public:
  CountingCpuAllocator() : inner_(c10::GetCPUAllocator()) {
    // Counters are global: a block allocated here may be freed after this object is gone.
    start_ = live().load();
    peak().store(start_);
    c10::SetCPUAllocator(this, kPriority);
  }
  ~CountingCpuAllocator() override { c10::SetCPUAllocator(inner_, kPriority); }
  CountingCpuAllocator(const CountingCpuAllocator&) = delete;
  CountingCpuAllocator& operator=(const CountingCpuAllocator&) = delete;

  c10::DataPtr allocate(size_t n) override {
    c10::DataPtr inner = inner_->allocate(n);
    void* data = inner.get();
    const c10::Device device = inner.device();
    const int64_t now = live().fetch_add(static_cast<int64_t>(n)) + static_cast<int64_t>(n);
    int64_t seen = peak().load();
    while (now > seen && !peak().compare_exchange_weak(seen, now)) {
    }
    return {data, new Block{std::move(inner), n}, &release, device};
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    inner_->copy_data(dest, src, count);
  }

  /// Highest number of bytes live at once since construction, minus those live then.
  int64_t peak_extra() const { return peak().load() - start_; }
  /// Bytes live now, minus those live at construction.
  int64_t live_extra() const { return live().load() - start_; }

 private:
  static constexpr uint8_t kPriority = 255;  // above the default CPU allocator's
  struct Block {
    c10::DataPtr inner;  // freeing it returns the memory to the allocator that gave it
    std::size_t bytes;
  };
  static void release(void* ctx) {
    auto* block = static_cast<Block*>(ctx);
    live().fetch_sub(static_cast<int64_t>(block->bytes));
    delete block;
  }
  static std::atomic<int64_t>& live() {
    static std::atomic<int64_t> bytes{0};
    return bytes;
  }
  static std::atomic<int64_t>& peak() {
    static std::atomic<int64_t> bytes{0};
    return bytes;
  }

  c10::Allocator* inner_;
  int64_t start_ = 0;
};

}  // namespace gradscope::torch::test
