// kernels/embedding.cu — dk_embedding: out[i, :] = table[ids[i], :], table
// f32/f16/bf16/q8_0/q4_0, out f32/f16/bf16.
//
// Two launches on the device's stream, in this order:
//   1. dk_embedding_check — 1-D grid of DK_EW_THREADS threads,
//      grid.x = min(ceil(n_ids / DK_EW_THREADS), DK_MAX_GRID_X), grid-stride
//      over positions i. An id outside [0, rows) is recorded in the op's
//      status slot (p.status, a 64-bit word the host set to ~0) with
//      atomicMin((i << 32) | (uint32)id): the slot ends up holding the first
//      bad position and its id. The host reads the slot at the next sync and
//      reports DK_ERR_INVALID naming the id and the position.
//   2. dk_embedding_gather — grid.x = min(n_ids, DK_MAX_GRID_X) blocks of
//      DK_EW_THREADS threads; block g copies rows i = g, g + gridDim.x, ...;
//      threads stride over the D columns. It first reads the status slot,
//      which launch 1 finished writing (stream order): if any id was bad,
//      nothing is written at all, as on the CPU, where the op refuses before
//      writing.
//
// dk_index_select (dk_index_select_check, dk_index_select_gather) works the
// same way over out [outer, nids, inner] from x [outer, n, inner]: ids in
// [-n, n), a negative one counting from the end; the gather gives each
// block output rows (grid-stride over the outer * nids rows), its threads the
// row's inner elements, copying their bytes (out and x share the dtype), and
// writes nothing when the check found a bad id.
//
// Indexing invariants: ids contiguous i32 [n_ids]; out contiguous
// [n_ids, D]; table row id starts at byte id * row_bytes (row_bytes = D *
// size, or (D / 32) * block bytes, D % 32 == 0 for the block formats).
// Values are decoded exactly as dk__cpu_dequant_row does (d * q in f32) and
// rounded once to out's dtype.
#include "dk_common.cuh"
#include "quants.cuh"

extern "C" __global__ void __launch_bounds__(DK_EW_THREADS) dk_embedding_check(const __grid_constant__ dk_kp_embedding p) { dk_grid_wait();
  const int32_t *ids = (const int32_t *)p.ids;
  for (int64_t i = dk_gtid(); i < p.n_ids; i += dk_gstride()) {
    const int32_t id = ids[i];
    if (id < 0 || (int64_t)id >= p.rows) {
      const unsigned long long pos = i < 0xffffffffll ? (unsigned long long)i : 0xffffffffull;
      atomicMin((unsigned long long *)p.status, (pos << 32) | (unsigned long long)(uint32_t)id);
    }
  }
}

DK_DEV float dk_table_value(const uint8_t *row, int64_t d, int tdt) {
  switch (tdt) {
  case DK_KT_Q8_0: return dk_q8_value(row + (d >> 5) * DK_Q8_BYTES, (int)(d & 31));
  case DK_KT_Q4_0: return dk_q4_value(row + (d >> 5) * DK_Q4_BYTES, (int)(d & 31));
  default: return tdt >= DK_KT_Q4_1 ? dkq_row_value(tdt, row, d) : dk_ld_rt(row, d, tdt);
  }
}

extern "C" __global__ void __launch_bounds__(DK_EW_THREADS) dk_embedding_gather(const __grid_constant__ dk_kp_embedding p) { dk_grid_wait();
  if (*(const volatile unsigned long long *)p.status != ~0ull) return;   // a bad id: write nothing
  const int32_t *ids = (const int32_t *)p.ids;
  const uint8_t *table = (const uint8_t *)p.table;
  for (int64_t i = blockIdx.x; i < p.n_ids; i += gridDim.x) {
    const uint8_t *row = table + (int64_t)ids[i] * p.row_bytes;
    for (int64_t d = threadIdx.x; d < p.D; d += blockDim.x)
      dk_st_rt((void *)p.out, i * p.D + d, dk_table_value(row, d, p.tdt), p.odt);
  }
}

// dk_dequant_rows: the whole table, rows [0, p.rows), dequantized into out
// [rows, D] in out's dtype (p.ids and p.status unused). The prompt path of
// dk_linear (backends/cuda.h) turns a block-format weight into f16 this way
// before a tensor-core GEMM. grid.x = min(rows, DK_MAX_GRID_X) blocks, grid-
// stride over rows; threads stride over the D columns.
extern "C" __global__ void __launch_bounds__(DK_EW_THREADS) dk_dequant_rows(const __grid_constant__ dk_kp_embedding p) { dk_grid_wait();
  const uint8_t *table = (const uint8_t *)p.table;
  for (int64_t i = blockIdx.x; i < p.rows; i += gridDim.x) {
    const uint8_t *row = table + i * p.row_bytes;
    for (int64_t d = threadIdx.x; d < p.D; d += blockDim.x)
      dk_st_rt((void *)p.out, i * p.D + d, dk_table_value(row, d, p.tdt), p.odt);
  }
}

extern "C" __global__ void __launch_bounds__(DK_EW_THREADS) dk_index_select_check(const __grid_constant__ dk_kp_gather p) { dk_grid_wait();
  const int32_t *ids = (const int32_t *)p.ids;
  for (int64_t k = dk_gtid(); k < p.nids; k += dk_gstride()) {
    const int64_t id = ids[k];
    if (id < -p.n || id >= p.n) {
      const unsigned long long pos = k < 0xffffffffll ? (unsigned long long)k : 0xffffffffull;
      atomicMin((unsigned long long *)p.status, (pos << 32) | (unsigned long long)(uint32_t)ids[k]);
    }
  }
}

// dk_index_select_gather: out rows r = (q, k) of [outer, nids, inner] from x
// rows (q, ids[k]) of [outer, n, inner]; dk_index_copy_scatter the other way
// (dk_index_copy: out is dst [outer, n, inner], x is src [outer, nids,
// inner]), converted from p.xdt to p.odt, its ids checked first by
// dk_index_select_check (the same status slot); with an id twice, which row
// lands is unspecified (as the op says). A bad id anywhere: nothing written.
// Block g moves rows r = g, g + gridDim.x, ...; threads stride over the
// row's inner elements (one division per row, not per element).
template <bool SCATTER> __device__ void dk_rows_move(const dk_kp_gather &p) {
  if (*(const volatile unsigned long long *)p.status != ~0ull) return;   // a bad id: write nothing
  const int32_t *ids = (const int32_t *)p.ids;
  for (int64_t r = blockIdx.x; r < p.outer * p.nids; r += gridDim.x) {
    const int64_t q = r / p.nids, k = r - q * p.nids;
    int64_t row = ids[k];
    if (row < 0) row += p.n;
    const int64_t at = (q * p.n + row) * p.inner, dst = SCATTER ? at : r * p.inner, src = SCATTER ? r * p.inner : at;
    if (!SCATTER || p.xdt == p.odt) {
      for (int64_t j = threadIdx.x; j < p.inner; j += blockDim.x) {
        if (p.esize == 4) ((uint32_t *)p.out)[dst + j] = ((const uint32_t *)p.x)[src + j];
        else ((uint16_t *)p.out)[dst + j] = ((const uint16_t *)p.x)[src + j];
      }
    } else {
      for (int64_t j = threadIdx.x; j < p.inner; j += blockDim.x)
        dk_st_rt((void *)p.out, dst + j, dk_ld_rt((const void *)p.x, src + j, p.xdt), p.odt);
    }
  }
}

extern "C" __global__ void __launch_bounds__(DK_EW_THREADS) dk_index_select_gather(const __grid_constant__ dk_kp_gather p) { dk_grid_wait(); dk_rows_move<false>(p); }
extern "C" __global__ void __launch_bounds__(DK_EW_THREADS) dk_index_copy_scatter(const __grid_constant__ dk_kp_gather p) { dk_grid_wait(); dk_rows_move<true>(p); }
