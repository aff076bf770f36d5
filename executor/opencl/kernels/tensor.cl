// Kernels of the general tensor kinds over row-major rows of the last axis, consecutive rows a
// row stride (the pixel stride) apart.

// MatMul: C[b] = act(A[b] x B[b]) with A[b] [m][k], B[b] [k][n] and C[b] [m][n] row-major,
// consecutive rows of each `*_rs` floats apart (the pixel stride: more than the row inside a
// concat slice).
// Work-group (8, 8) computes a 32x64 tile of C, each work-item a 4x8 block (rows 4 ly + i,
// columns 8 lx + j, one float8 accumulator per row), stepping through k PSCHED_MM_TK at a time
// via tiles of A and B staged in local memory; loads outside the matrices read 0, so any m, n,
// k works. Dimension 2 is the batch: its index is decomposed over `batch` (up to four dims,
// innermost in .w) and the operands' matrix strides `a_batch` / `b_batch` (0 along broadcast
// dims) pick each operand's matrix.
#define PSCHED_MM_TILE_M 32
#define PSCHED_MM_TILE_N 64
#define PSCHED_MM_TK 16
#define PSCHED_MM_WG 8
__kernel __attribute__((reqd_work_group_size(PSCHED_MM_WG, PSCHED_MM_WG, 1)))
void psched_matmul(__global const float* a, int a_off, int a_rs, __global const float* b,
                   int b_off, int b_rs, __global float* c, int c_off, int c_rs, int m, int n,
                   int k, int4 batch,
                   int4 a_batch, int4 b_batch, int act_kind, float4 act) {
  __local float ta[PSCHED_MM_TK][PSCHED_MM_TILE_M];  // [k][row]
  __local float tb[PSCHED_MM_TK][PSCHED_MM_TILE_N];  // [k][column]
  const int lx = get_local_id(0), ly = get_local_id(1);
  const int lid = ly * PSCHED_MM_WG + lx;
  const int col0 = get_group_id(0) * PSCHED_MM_TILE_N;
  const int row0 = get_group_id(1) * PSCHED_MM_TILE_M;
  const int z = get_global_id(2);
  int rest = z;
  const int i3 = rest % batch.w; rest /= batch.w;
  const int i2 = rest % batch.z; rest /= batch.z;
  const int i1 = rest % batch.y; rest /= batch.y;
  const int i0 = rest;
  const int am = i0 * a_batch.x + i1 * a_batch.y + i2 * a_batch.z + i3 * a_batch.w;
  const int bm = i0 * b_batch.x + i1 * b_batch.y + i2 * b_batch.z + i3 * b_batch.w;
  __global const float* pa = a + a_off + am * m * a_rs;
  __global const float* pb = b + b_off + bm * k * b_rs;
  __global float* pc = c + c_off + z * m * c_rs;

  float8 acc0 = (float8)(0.0f), acc1 = (float8)(0.0f), acc2 = (float8)(0.0f),
         acc3 = (float8)(0.0f);
  for (int k0 = 0; k0 < k; k0 += PSCHED_MM_TK) {
    // Both tiles spread over the 64 work-items; consecutive work-items read consecutive
    // addresses (along k in A, along n in B).
    for (int e = lid; e < PSCHED_MM_TILE_M * PSCHED_MM_TK; e += PSCHED_MM_WG * PSCHED_MM_WG) {
      const int ar = e / PSCHED_MM_TK, ak = e % PSCHED_MM_TK;
      const int gr = row0 + ar, gk = k0 + ak;
      ta[ak][ar] = gr < m && gk < k ? pa[gr * a_rs + gk] : 0.0f;
    }
    for (int e = lid; e < PSCHED_MM_TILE_N * PSCHED_MM_TK; e += PSCHED_MM_WG * PSCHED_MM_WG) {
      const int bk = e / PSCHED_MM_TILE_N, bc = e % PSCHED_MM_TILE_N;
      const int gbk = k0 + bk, gc = col0 + bc;
      tb[bk][bc] = gbk < k && gc < n ? pb[gbk * b_rs + gc] : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < PSCHED_MM_TK; ++kk) {
      const float4 av = vload4(ly, ta[kk]);
      const float8 bv = vload8(lx, tb[kk]);
      acc0 = fma((float8)(av.x), bv, acc0);
      acc1 = fma((float8)(av.y), bv, acc1);
      acc2 = fma((float8)(av.z), bv, acc2);
      acc3 = fma((float8)(av.w), bv, acc3);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const int col = col0 + 8 * lx;
  const float8 rows[4] = {acc0, acc1, acc2, acc3};
  for (int i = 0; i < 4; ++i) {
    const int r = row0 + 4 * ly + i;
    if (r >= m || col >= n) continue;
    __global float* dst = pc + r * c_rs + col;
    const float4 lo = psched_activate4(rows[i].lo, act_kind, act);
    const float4 hi = psched_activate4(rows[i].hi, act_kind, act);
    if (col + 8 <= n) {
      vstore4(lo, 0, dst);
      vstore4(hi, 1, dst);
    } else {
      const float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
      for (int j = 0; col + j < n; ++j) dst[j] = v[j];
    }
  }
}

// Row kernels: one work-group of PSCHED_ROW_WG work-items per row of `n` floats (row r at
// off + r * ps), each work-item striding over the row, combined in local memory. Rows of
// transformer tensors are few and long (tokens x features), so a row is spread over a group
// instead of one work-item.
#define PSCHED_ROW_WG 64

inline float psched_group_sum(float v, __local float* part) {
  const int lid = get_local_id(0);
  part[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = PSCHED_ROW_WG / 2; s > 0; s >>= 1) {
    if (lid < s) part[lid] += part[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float r = part[0];
  barrier(CLK_LOCAL_MEM_FENCE);  // part is reused by the next reduction
  return r;
}

inline float psched_group_max(float v, __local float* part) {
  const int lid = get_local_id(0);
  part[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = PSCHED_ROW_WG / 2; s > 0; s >>= 1) {
    if (lid < s) part[lid] = fmax(part[lid], part[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float r = part[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

// Softmax over each row, max-subtracted.
__kernel __attribute__((reqd_work_group_size(PSCHED_ROW_WG, 1, 1)))
void psched_softmax_rows(__global const float* in, int in_off, int in_ps, __global float* out,
                         int out_off, int out_ps, int n, int act_kind, float4 act) {
  __local float part[PSCHED_ROW_WG];
  const int row = get_group_id(0), lid = get_local_id(0);
  __global const float* x = in + in_off + row * in_ps;
  __global float* y = out + out_off + row * out_ps;
  float m = -INFINITY;
  for (int i = lid; i < n; i += PSCHED_ROW_WG) m = fmax(m, x[i]);
  m = psched_group_max(m, part);
  float s = 0.0f;
  for (int i = lid; i < n; i += PSCHED_ROW_WG) s += exp(x[i] - m);
  const float inv = 1.0f / psched_group_sum(s, part);
  for (int i = lid; i < n; i += PSCHED_ROW_WG) {
    y[i] = psched_activate(exp(x[i] - m) * inv, act_kind, act);
  }
}

// Layer norm over each row: (x - mean) / sqrt(variance + epsilon) * scale + bias, the
// variance from a second pass over x - mean. weights holds scale [n] then bias [n].
__kernel __attribute__((reqd_work_group_size(PSCHED_ROW_WG, 1, 1)))
void psched_layer_norm(__global const float* in, int in_off, int in_ps, __global float* out,
                       int out_off, int out_ps, __global const float* weights, int n,
                       float epsilon, int act_kind, float4 act) {
  __local float part[PSCHED_ROW_WG];
  const int row = get_group_id(0), lid = get_local_id(0);
  __global const float* x = in + in_off + row * in_ps;
  __global float* y = out + out_off + row * out_ps;
  float s = 0.0f;
  for (int i = lid; i < n; i += PSCHED_ROW_WG) s += x[i];
  const float mean = psched_group_sum(s, part) / n;
  float q = 0.0f;
  for (int i = lid; i < n; i += PSCHED_ROW_WG) {
    const float d = x[i] - mean;
    q = fma(d, d, q);
  }
  const float inv = 1.0f / sqrt(psched_group_sum(q, part) / n + epsilon);
  for (int i = lid; i < n; i += PSCHED_ROW_WG) {
    const float v = (x[i] - mean) * inv * weights[i] + weights[n + i];
    y[i] = psched_activate(v, act_kind, act);
  }
}
