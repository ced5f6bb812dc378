// graph::BufferPool: tensor storage an Executor reuses from one run to the next. Every run
// makes and frees the same intermediate tensors; with plain malloc, glibc gives the freed
// megabytes back to the system (mmap'd blocks, a trimmed heap) and the next run faults them in
// again, page by page (the demo CNN at batch 256: 14 ms a run instead of 2 in a plain loop).
//
// Tensor storage comes from pool_allocate / pool_release: each block carries a 16-byte header
// naming its pool (or none) and its size, so a block goes back where it came from whichever
// thread, tensor or container frees it. While a ScopedBufferPool is alive on a thread, tensors
// made on that thread take blocks of the exact size from its pool when it has one. The pool
// keeps freed blocks up to the most bytes it ever had handed out at once (so never more than
// the run's peak again), frees the rest, and lives until its owner and every block it handed
// out are gone.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <new>
#include <utility>

namespace quantkit {
namespace graph {
class BufferPool;
}  // namespace graph

namespace detail {

struct alignas(16) BlockHeader {
  graph::BufferPool* pool;   // where the block goes back to (nullptr: operator delete)
  std::size_t bytes;  // usable bytes after the header
};
static_assert(sizeof(BlockHeader) == 16, "the header keeps the data 16-byte aligned");

// A new block of `bytes` usable bytes going back to `pool` (nullptr: operator delete).
inline BlockHeader* new_block(graph::BufferPool* pool, std::size_t bytes) {
  BlockHeader* h = static_cast<BlockHeader*>(::operator new(sizeof(BlockHeader) + bytes));
  h->pool = pool;
  h->bytes = bytes;
  return h;
}

inline graph::BufferPool*& current_pool() {
  static thread_local graph::BufferPool* pool = nullptr;
  return pool;
}

}  // namespace detail

namespace graph {

class BufferPool {
 public:
  // A new pool, owned by the returned handle (its last copy closes it: blocks still out are
  // then freed as they come back).
  class Handle;
  static Handle create();

  // Bytes held for reuse, and the most handed out at once (diagnostics and tests).
  std::size_t cached_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_;
  }
  std::size_t peak_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return peak_;
  }
  std::size_t reused_blocks() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return reused_;
  }

  void* allocate(std::size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      out_ += bytes;
      if (out_ > peak_) peak_ = out_;
      auto it = free_.find(bytes);
      if (it != free_.end()) {
        quantkit::detail::BlockHeader* h = it->second;
        free_.erase(it);
        cached_ -= bytes;
        ++reused_;
        refs_.fetch_add(1, std::memory_order_relaxed);
        return h + 1;
      }
    }
    quantkit::detail::BlockHeader* h = nullptr;
    try {
      h = quantkit::detail::new_block(this, bytes);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      out_ -= bytes;
      throw;
    }
    refs_.fetch_add(1, std::memory_order_relaxed);
    return h + 1;
  }

  // A block of this pool comes back: kept for reuse while open and under the peak, else freed.
  void release(quantkit::detail::BlockHeader* h) noexcept {
    bool keep = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      out_ -= h->bytes;
      if (open_ && cached_ + h->bytes <= peak_) {
        try {
          free_.emplace(h->bytes, h);
          cached_ += h->bytes;
          keep = true;
        } catch (...) {  // no memory for the list's node: free the block instead
        }
      }
    }
    if (!keep) ::operator delete(h);
    unref();
  }

 private:
  BufferPool() = default;
  ~BufferPool() {
    for (auto& kv : free_) ::operator delete(kv.second);
  }

  void close() noexcept {
    std::multimap<std::size_t, quantkit::detail::BlockHeader*> blocks;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_ = false;
      blocks.swap(free_);
      cached_ = 0;
    }
    for (auto& kv : blocks) ::operator delete(kv.second);
    unref();
  }
  void unref() noexcept {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  mutable std::mutex mutex_;
  std::multimap<std::size_t, quantkit::detail::BlockHeader*> free_;
  std::size_t cached_ = 0, out_ = 0, peak_ = 0, reused_ = 0;
  bool open_ = true;
  std::atomic<std::size_t> refs_{1};     // the handles' share, plus one per block handed out
  std::atomic<std::size_t> handles_{1};  // Handle copies
};

// Shared ownership of a pool (copies share it); the last copy closes it.
class BufferPool::Handle {
 public:
  Handle() = default;
  Handle(const Handle& o) noexcept : pool_(o.pool_) {
    if (pool_) pool_->handles_.fetch_add(1, std::memory_order_relaxed);
  }
  Handle(Handle&& o) noexcept : pool_(o.pool_) { o.pool_ = nullptr; }
  Handle& operator=(Handle o) noexcept {
    std::swap(pool_, o.pool_);
    return *this;
  }
  ~Handle() {
    if (pool_ && pool_->handles_.fetch_sub(1, std::memory_order_acq_rel) == 1) pool_->close();
  }
  BufferPool* get() const { return pool_; }
  BufferPool* operator->() const { return pool_; }

 private:
  friend class BufferPool;
  BufferPool* pool_ = nullptr;
};

inline BufferPool::Handle BufferPool::create() {
  Handle h;
  h.pool_ = new BufferPool();
  return h;
}

// Tensors made on this thread while it is alive take their storage from `pool` (nullptr: none).
class ScopedBufferPool {
 public:
  explicit ScopedBufferPool(BufferPool* pool) noexcept : previous_(quantkit::detail::current_pool()) {
    quantkit::detail::current_pool() = pool;
  }
  ~ScopedBufferPool() { quantkit::detail::current_pool() = previous_; }
  ScopedBufferPool(const ScopedBufferPool&) = delete;
  ScopedBufferPool& operator=(const ScopedBufferPool&) = delete;

 private:
  BufferPool* previous_;
};

}  // namespace graph

namespace detail {

// Storage for `bytes` bytes, 16-byte aligned: from the thread's current pool, else new.
inline void* pool_allocate(std::size_t bytes) {
  if (graph::BufferPool* p = current_pool()) return p->allocate(bytes);
  return new_block(nullptr, bytes) + 1;
}

inline void pool_release(void* data) noexcept {
  if (!data) return;
  BlockHeader* h = static_cast<BlockHeader*>(data) - 1;
  if (h->pool) {
    h->pool->release(h);
  } else {
    ::operator delete(h);
  }
}

}  // namespace detail
}  // namespace quantkit
