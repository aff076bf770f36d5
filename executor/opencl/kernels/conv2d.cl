// 2-D convolution, NHWC. One work-item computes 8 output channels (float8) for
// PSCHED_CONV_TILE_W adjacent output columns of one output row, so each input value loaded is
// reused 8 times and each weight vector PSCHED_CONV_TILE_W times. Columns outside the input
// read a clamped address and are zeroed by a mask, which keeps the inner loop branch-free.
//
// Work is bound to a slice at kernel creation:
//  - output channels: groups [g_begin, ...) and, within a group, channels [co_lo, co_hi);
//  - output rows: [oh_begin, oh_begin + global size 2), reading the input halo around them;
//  - input channels: [ci_begin, ci_end) within the group, written with `mode` (partial sums).
// Packed weights: [group][kh][kw][cin/group][cog_stride], cog_stride >= cout/group + 7 and
// zero-padded, so a float8 load never leaves the group's row.

#define PSCHED_CONV_TILE_W 4
#define PSCHED_CONV_TILE_C 8

__kernel void psched_conv2d(
    __global const float* in, int in_off, int in_ps, int in_h, int in_w,
    __global float* out, int out_off, int out_ps, int out_h, int out_w,
    __global const float* weights, int w_off, int b_off,
    int k_h, int k_w, int s_h, int s_w, int d_h, int d_w, int pad_t, int pad_l,
    int cig, int cog, int cog_stride, int g_begin, int co_lo, int co_hi, int oh_begin,
    int ci_begin, int ci_end, int mode, int act_kind, float4 act) {
  const int blocks_per_group = (co_hi - co_lo + PSCHED_CONV_TILE_C - 1) / PSCHED_CONV_TILE_C;
  // Pixels vary fastest and channel blocks slowest, so the work-items a driver runs back to
  // back share one block's weights (kept in cache) instead of streaming all of them per pixel.
  const int block = get_global_id(2);
  const int g = g_begin + block / blocks_per_group;
  const int co_local = co_lo + (block % blocks_per_group) * PSCHED_CONV_TILE_C;
  const int ow0 = get_global_id(0) * PSCHED_CONV_TILE_W;
  const int oh = oh_begin + get_global_id(1);
  if (ow0 >= out_w || oh >= out_h) return;

  float8 acc0 = (float8)(0.0f), acc1 = (float8)(0.0f), acc2 = (float8)(0.0f),
         acc3 = (float8)(0.0f);
  const int ci_base = in_off + g * cig;
  for (int r = 0; r < k_h; ++r) {
    const int ih = oh * s_h - pad_t + r * d_h;
    if (ih < 0 || ih >= in_h) continue;
    for (int s = 0; s < k_w; ++s) {
      int4 iw = (int4)(ow0, ow0 + 1, ow0 + 2, ow0 + 3) * s_w - pad_l + s * d_w;
      const int4 valid = iw >= 0 && iw < in_w && (int4)(ow0, ow0 + 1, ow0 + 2, ow0 + 3) < out_w;
      const float4 mask = select((float4)(0.0f), (float4)(1.0f), valid);
      iw = select((int4)(0), iw, valid);
      __global const float* x0 = in + ci_base + (ih * in_w + iw.x) * in_ps;
      __global const float* x1 = in + ci_base + (ih * in_w + iw.y) * in_ps;
      __global const float* x2 = in + ci_base + (ih * in_w + iw.z) * in_ps;
      __global const float* x3 = in + ci_base + (ih * in_w + iw.w) * in_ps;
      __global const float* w_row =
          weights + w_off + (((g * k_h + r) * k_w + s) * cig) * cog_stride + co_local;
      for (int ci = ci_begin; ci < ci_end; ++ci) {
        const float8 w = vload8(0, w_row + ci * cog_stride);
        acc0 = fma((float8)(x0[ci] * mask.x), w, acc0);
        acc1 = fma((float8)(x1[ci] * mask.y), w, acc1);
        acc2 = fma((float8)(x2[ci] * mask.z), w, acc2);
        acc3 = fma((float8)(x3[ci] * mask.w), w, acc3);
      }
    }
  }

  const int lanes = min(PSCHED_CONV_TILE_C, co_hi - co_local);
  const int co = g * cog + co_local;
  float bias[PSCHED_CONV_TILE_C];
  for (int l = 0; l < PSCHED_CONV_TILE_C; ++l) {
    bias[l] = (b_off >= 0 && l < lanes) ? weights[b_off + co + l] : 0.0f;
  }
  for (int t = 0; t < PSCHED_CONV_TILE_W; ++t) {
    const int ow = ow0 + t;
    if (ow >= out_w) break;
    const float8 a = t == 0 ? acc0 : (t == 1 ? acc1 : (t == 2 ? acc2 : acc3));
    const float v[PSCHED_CONV_TILE_C] = {a.s0, a.s1, a.s2, a.s3, a.s4, a.s5, a.s6, a.s7};
    __global float* dst = out + out_off + (oh * out_w + ow) * out_ps + co;
    if (mode == PSCHED_STORE && lanes == PSCHED_CONV_TILE_C) {
      const float4 lo = psched_activate4((float4)(v[0], v[1], v[2], v[3]) +
                                         (float4)(bias[0], bias[1], bias[2], bias[3]),
                                         act_kind, act);
      const float4 hi = psched_activate4((float4)(v[4], v[5], v[6], v[7]) +
                                         (float4)(bias[4], bias[5], bias[6], bias[7]),
                                         act_kind, act);
      vstore8((float8)(lo, hi), 0, dst);
    } else {
      for (int l = 0; l < lanes; ++l) {
        psched_write(dst + l, psched_activate(v[l] + bias[l], act_kind, act), mode);
      }
    }
  }
}

// Depthwise convolution (groups == in_c, multiplier m = out_c / in_c): vectorised over 4
// consecutive output channels, which may span several groups; output channel co reads input
// channel co / m. Packed weights: [kh][kw][out_c + 3], zero-padded. Channel slices are
// [c_lo, c_hi) (whole groups), row slices as in psched_conv2d.
__kernel void psched_depthwise_conv2d(
    __global const float* in, int in_off, int in_ps, int in_h, int in_w,
    __global float* out, int out_off, int out_ps, int out_h, int out_w, int out_c,
    __global const float* weights, int w_off, int b_off,
    int k_h, int k_w, int s_h, int s_w, int d_h, int d_w, int pad_t, int pad_l,
    int multiplier, int c_lo, int c_hi, int oh_begin, int act_kind, float4 act) {
  const int co = c_lo + get_global_id(0) * 4;
  const int ow0 = get_global_id(1) * PSCHED_CONV_TILE_W;
  const int oh = oh_begin + get_global_id(2);
  if (co >= c_hi || ow0 >= out_w || oh >= out_h) return;
  const int lanes = min(4, c_hi - co);
  const int last = c_hi - 1;
  const int4 ci = (int4)(co / multiplier, min(co + 1, last) / multiplier,
                         min(co + 2, last) / multiplier, min(co + 3, last) / multiplier);
  const int w_stride = out_c + 3;

  float4 acc[PSCHED_CONV_TILE_W];
  for (int t = 0; t < PSCHED_CONV_TILE_W; ++t) acc[t] = (float4)(0.0f);
  for (int r = 0; r < k_h; ++r) {
    const int ih = oh * s_h - pad_t + r * d_h;
    if (ih < 0 || ih >= in_h) continue;
    for (int s = 0; s < k_w; ++s) {
      const float4 w = vload4(0, weights + w_off + (r * k_w + s) * w_stride + co);
      for (int t = 0; t < PSCHED_CONV_TILE_W; ++t) {
        const int iw = (ow0 + t) * s_w - pad_l + s * d_w;
        if (iw < 0 || iw >= in_w || ow0 + t >= out_w) continue;
        __global const float* px = in + in_off + (ih * in_w + iw) * in_ps;
        const float4 x = (float4)(px[ci.x], px[ci.y], px[ci.z], px[ci.w]);
        acc[t] = fma(x, w, acc[t]);
      }
    }
  }
  float4 bias = (float4)(0.0f);
  if (b_off >= 0) {
    const int b = b_off + co;
    bias = (float4)(weights[b], lanes > 1 ? weights[b + 1] : 0.0f,
                    lanes > 2 ? weights[b + 2] : 0.0f, lanes > 3 ? weights[b + 3] : 0.0f);
  }
  for (int t = 0; t < PSCHED_CONV_TILE_W; ++t) {
    const int ow = ow0 + t;
    if (ow >= out_w) break;
    const float4 v = psched_activate4(acc[t] + bias, act_kind, act);
    __global float* dst = out + out_off + (oh * out_w + ow) * out_ps + co;
    if (lanes == 4) {
      vstore4(v, 0, dst);
    } else {
      dst[0] = v.x;
      if (lanes > 1) dst[1] = v.y;
      if (lanes > 2) dst[2] = v.z;
    }
  }
}
