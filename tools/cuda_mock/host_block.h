// tools/cuda_mock/host_block.h — a CUDA grid on host threads, for the host
// checks that run a kernel's own code (mma_host.cpp, flash_host.cpp,
// quants_host.cpp): blocks one after another, a std::thread per CUDA thread
// of a block, its barrier (__syncthreads) and a barrier per warp for the
// warp-wide instructions the checks emulate. Shared memory is the kernel's
// `__shared__` arrays made `static`: one block runs at a time. Also what
// dk_common.cuh gives the kernels these checks run (devkit.h and
// kernels/dk_params.h before this file).
#pragma once
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

struct dim3h { unsigned x, y, z; };
static thread_local dim3h threadIdx;
static dim3h blockIdx, gridDim, blockDim;

struct host_barrier {   // n threads meet; reusable
  std::mutex m;
  std::condition_variable cv;
  int n = 0, waiting = 0;
  unsigned gen = 0;
  void wait() {
    std::unique_lock<std::mutex> lk(m);
    unsigned g = gen;
    if (++waiting == n) { waiting = 0; gen++; cv.notify_all(); return; }
    cv.wait(lk, [&] { return gen != g; });
  }
};
#define HB_MAX_THREADS 1024
static host_barrier block_bar, warp_bar[HB_MAX_THREADS / 32];
static inline void __syncthreads() { block_bar.wait(); }
static inline int lane_of() { return (int)threadIdx.x & 31; }
static inline int warp_base() { return (int)threadIdx.x & ~31; }
static inline void warp_sync() { warp_bar[threadIdx.x >> 5].wait(); }

// __shfl_xor_sync: the value of lane ^ m (the whole warp calls it)
static float hb_shfl_slot[HB_MAX_THREADS];
static inline float __shfl_xor_sync(unsigned, float v, int m) {
  hb_shfl_slot[threadIdx.x] = v;
  warp_sync();
  const float r = hb_shfl_slot[warp_base() + (lane_of() ^ m)];
  warp_sync();
  return r;
}

// dk_common.cuh's loads and stores of a float dtype by its run-time code
static inline float dk_ld_rt(const void *p, int64_t i, int dt) {
  if (dt == DK_KT_F16) return dk_f16_to_f32(((const uint16_t *)p)[i]);
  if (dt == DK_KT_BF16) return dk_bf16_to_f32(((const uint16_t *)p)[i]);
  return ((const float *)p)[i];
}
static inline void dk_st_rt(void *p, int64_t i, float v, int dt) {
  if (dt == DK_KT_F16) ((uint16_t *)p)[i] = dk_f32_to_f16(v);
  else if (dt == DK_KT_BF16) ((uint16_t *)p)[i] = dk_f32_to_bf16(v);
  else ((float *)p)[i] = v;
}

// body() on every thread of every block of the grid (threads a multiple of 32)
static inline void run_grid(dim3h grid, unsigned threads, const std::function<void()> &body) {
  gridDim = grid;
  blockDim = {threads, 1, 1};
  block_bar.n = (int)threads;
  for (unsigned w = 0; w < threads / 32; w++) warp_bar[w].n = 32;
  for (unsigned z = 0; z < grid.z; z++)
    for (unsigned y = 0; y < grid.y; y++)
      for (unsigned x = 0; x < grid.x; x++) {
        std::vector<std::thread> th;
        blockIdx = {x, y, z};
        for (unsigned i = 0; i < threads; i++)
          th.emplace_back([&body, i] { threadIdx = {i, 0, 0}; body(); });
        for (auto &t : th) t.join();
      }
}
