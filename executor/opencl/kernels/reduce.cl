// ReduceMean / ReduceSum / ReduceMax over any axes of a row-major tensor of rank up to six.

#define PSCHED_REDUCE_MEAN 0
#define PSCHED_REDUCE_SUM 1
#define PSCHED_REDUCE_MAX 2

// One work-item per output element (a kept-axes index, row-major over `kept`); it walks the
// reduced axes (`reduced`, 1 along kept axes) in nested loops, so the common reduction over
// the last axis reads consecutive floats. `kst` / `rst` are the input's element strides along
// each axis (row-major over its physical dims), zeroed where the axis is not kept / reduced.
// Positions go through psched_row_position (kernels/strided_copy.cl) for padded rows.
__kernel void psched_reduce(__global const float* in, int in_off, int in_c, int in_rs,
                            __global float* out, int out_off, int out_c, int out_rs,
                            int8 kept, int8 kst, int8 reduced, int8 rst, int kind,
                            int act_kind, float4 act) {
  const int o = get_global_id(0);
  const int count = kept.s0 * kept.s1 * kept.s2 * kept.s3 * kept.s4 * kept.s5;
  if (o >= count) return;
  int rest = o;
  const int k5 = rest % kept.s5; rest /= kept.s5;
  const int k4 = rest % kept.s4; rest /= kept.s4;
  const int k3 = rest % kept.s3; rest /= kept.s3;
  const int k2 = rest % kept.s2; rest /= kept.s2;
  const int k1 = rest % kept.s1;
  const int k0 = rest / kept.s1;
  const int base = k0 * kst.s0 + k1 * kst.s1 + k2 * kst.s2 + k3 * kst.s3 + k4 * kst.s4 +
                   k5 * kst.s5;
  float acc = kind == PSCHED_REDUCE_MAX ? -INFINITY : 0.0f;
  for (int r0 = 0; r0 < reduced.s0; ++r0)
  for (int r1 = 0; r1 < reduced.s1; ++r1)
  for (int r2 = 0; r2 < reduced.s2; ++r2)
  for (int r3 = 0; r3 < reduced.s3; ++r3)
  for (int r4 = 0; r4 < reduced.s4; ++r4) {
    const int row = base + r0 * rst.s0 + r1 * rst.s1 + r2 * rst.s2 + r3 * rst.s3 + r4 * rst.s4;
    for (int r5 = 0; r5 < reduced.s5; ++r5) {
      const float x = in[in_off + psched_row_position(row + r5 * rst.s5, in_c, in_rs)];
      acc = kind == PSCHED_REDUCE_MAX ? fmax(acc, x) : acc + x;
    }
  }
  const int n = reduced.s0 * reduced.s1 * reduced.s2 * reduced.s3 * reduced.s4 * reduced.s5;
  if (kind == PSCHED_REDUCE_MEAN) acc /= (float)n;
  out[out_off + psched_row_position(o, out_c, out_rs)] = psched_activate(acc, act_kind, act);
}
