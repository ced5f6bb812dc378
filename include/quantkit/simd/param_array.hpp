// Per-call parameter arrays of the SIMD front ends (quantkit/simd/api.hpp): the kernels' scale
// factors and float zero points, the requantization constants. Per-channel and per-group
// parameters are converted on every call, so where their memory comes from is part of the
// call's cost: inline (on the stack) up to ParamArray::kInline values, else from the calling
// thread's ParamScratch, and from the heap only past ParamScratch::kMaxBytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace quantkit {
namespace simd {
namespace detail {

// A thread's scratch memory for ParamArrays, taken and given back in stack order (ParamArrays
// are locals of one call). A heap allocation per array per call (std::vector: malloc, zero
// fill, free) was ~6 % of a per-group-32 quantize of 16K values (512 groups) on Zen 5, and
// requantize makes nine arrays per call for a layer of more than 256 channels.
//
// The scratch cannot move while arrays live in it: a take that does not fit then returns
// nullptr (the array goes to the heap) and counts toward what the call needed, so that the
// next call's first take grows the scratch to that: from the second call of a size on, no
// array allocates.
class ParamScratch {
 public:
  static constexpr std::size_t kAlign = 64;               // every array starts on a cache line
  static constexpr std::size_t kMaxBytes = std::size_t{4} << 20;  // kept per thread at most

  static ParamScratch& local() {
    static thread_local ParamScratch scratch;
    return scratch;
  }

  // `bytes` (a multiple of kAlign) of kAlign-aligned memory, or nullptr when the caller must
  // allocate them itself. Give them back (give_back) before any block taken earlier.
  void* take(std::size_t bytes) {
    const std::size_t end = used_ + bytes;
    // too large to keep per thread (bytes on its own: used_ + bytes wraps for a huge count)
    if (bytes > kMaxBytes || end > kMaxBytes) return nullptr;
    if (used_ == 0) {  // a call's first array: make room for what the last calls needed
      missed_ = 0;
      if (end > peak_) peak_ = end;
      if (capacity_ < peak_) grow(peak_);
    }
    const std::size_t need = end + missed_;  // with the call's arrays that went to the heap
    if (need > peak_) peak_ = need < kMaxBytes ? need : kMaxBytes;
    if (end > capacity_) {  // arrays live in the scratch: it cannot move now
      missed_ += bytes;
      return nullptr;
    }
    void* p = base_ + used_;
    used_ = end;
    return p;
  }
  void give_back(std::size_t bytes) { used_ -= bytes; }

  std::size_t capacity() const { return capacity_; }
  std::size_t used() const { return used_; }

 private:
  void grow(std::size_t bytes) {
    std::unique_ptr<unsigned char[]> fresh(new unsigned char[bytes + kAlign - 1]);
    const auto at = reinterpret_cast<std::uintptr_t>(fresh.get());
    base_ = fresh.get() + (kAlign - at % kAlign) % kAlign;
    memory_ = std::move(fresh);
    capacity_ = bytes;
  }

  std::unique_ptr<unsigned char[]> memory_;
  unsigned char* base_ = nullptr;
  std::size_t capacity_ = 0, used_ = 0;
  std::size_t peak_ = 0;    // the most one call took (capped at kMaxBytes)
  std::size_t missed_ = 0;  // bytes of this call's arrays that went to the heap
};

// Parameters per parameter index, T trivial (float, std::int32_t), written before being read
// (no initialization): inline up to kInline of them (per tensor, and the channels of most
// layers), else in the thread's ParamScratch, else on the heap.
template <class T>
class ParamArray {
 public:
  static constexpr std::size_t kInline = 256;  // per-group blocks of 32 in 8K values

  // Inline: the common case is a few stores (out of line, each array cost ~20 instructions;
  // requantize makes nine per call).
  explicit ParamArray(std::size_t n) : data_(inline_) {
    if (n > kInline) take_outside(n);
  }
  ~ParamArray() {
    if (scratch_bytes_ != 0) ParamScratch::local().give_back(scratch_bytes_);
  }
  ParamArray(const ParamArray&) = delete;
  ParamArray& operator=(const ParamArray&) = delete;

  T* data() { return data_; }
  T& operator[](std::size_t i) { return data_[i]; }

 private:
  // More than kInline values: from the thread's scratch, else the heap (out of line, so that
  // the constructor stays small enough to inline).
#if defined(__GNUC__) || defined(__clang__)
  __attribute__((noinline))
#elif defined(_MSC_VER)
  __declspec(noinline)
#endif
  void take_outside(std::size_t n) {
    const std::size_t bytes = (n * sizeof(T) + ParamScratch::kAlign - 1) / ParamScratch::kAlign * ParamScratch::kAlign;
    if (void* p = ParamScratch::local().take(bytes)) {
      data_ = static_cast<T*>(p);
      scratch_bytes_ = bytes;
      return;
    }
    heap_.reset(new T[n]);  // default-initialized: no zero fill
    data_ = heap_.get();
  }

  T inline_[kInline];  // written before being read: no initialization
  std::unique_ptr<T[]> heap_;
  T* data_;
  std::size_t scratch_bytes_ = 0;
};

}  // namespace detail
}  // namespace simd
}  // namespace quantkit
