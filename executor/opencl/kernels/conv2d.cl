// 2-D convolution, NHWC. One work-item computes 4 output channels (float4) for
// PSCHED_CONV_TILE_W adjacent output columns of one output row, so each input value loaded is
// reused 4 times and each weight vector PSCHED_CONV_TILE_W times.
//
// Work is bound to a slice at kernel creation:
//  - output channels: groups [g_begin, ...) and, within a group, channels [co_lo, co_hi);
//  - output rows: [oh_begin, oh_begin + global size 2), reading the input halo around them;
//  - input channels: [ci_begin, ci_end) within the group, written with `mode` (partial sums).
// Packed weights: [group][kh][kw][cin/group][cog_stride], cog_stride >= cout/group + 3 and
// zero-padded, so a float4 load never leaves the group's row.

#define PSCHED_CONV_TILE_W 4

__kernel void psched_conv2d(
    __global const float* in, int in_off, int in_h, int in_w, int in_c,
    __global float* out, int out_off, int out_h, int out_w, int out_c,
    __global const float* weights, int w_off, int b_off,
    int k_h, int k_w, int s_h, int s_w, int d_h, int d_w, int pad_t, int pad_l,
    int cig, int cog, int cog_stride, int g_begin, int co_lo, int co_hi, int oh_begin,
    int ci_begin, int ci_end, int mode, int act_kind, float4 act) {
  const int blocks_per_group = (co_hi - co_lo + 3) / 4;
  const int block = get_global_id(0);
  const int g = g_begin + block / blocks_per_group;
  const int co_local = co_lo + (block % blocks_per_group) * 4;
  const int ow0 = get_global_id(1) * PSCHED_CONV_TILE_W;
  const int oh = oh_begin + get_global_id(2);
  if (ow0 >= out_w || oh >= out_h) return;

  float4 acc[PSCHED_CONV_TILE_W];
  for (int t = 0; t < PSCHED_CONV_TILE_W; ++t) acc[t] = (float4)(0.0f);

  const int ci_base = g * cig;
  for (int r = 0; r < k_h; ++r) {
    const int ih = oh * s_h - pad_t + r * d_h;
    if (ih < 0 || ih >= in_h) continue;
    for (int s = 0; s < k_w; ++s) {
      int x_index[PSCHED_CONV_TILE_W];
      for (int t = 0; t < PSCHED_CONV_TILE_W; ++t) {
        const int iw = (ow0 + t) * s_w - pad_l + s * d_w;
        x_index[t] = (iw >= 0 && iw < in_w && ow0 + t < out_w)
                         ? in_off + (ih * in_w + iw) * in_c + ci_base
                         : -1;
      }
      __global const float* w_row =
          weights + w_off + (((g * k_h + r) * k_w + s) * cig) * cog_stride + co_local;
      for (int ci = ci_begin; ci < ci_end; ++ci) {
        const float4 w = vload4(0, w_row + ci * cog_stride);
        for (int t = 0; t < PSCHED_CONV_TILE_W; ++t) {
          const float x = x_index[t] >= 0 ? in[x_index[t] + ci] : 0.0f;
          acc[t] = fma((float4)(x), w, acc[t]);
        }
      }
    }
  }

  const int lanes = min(4, co_hi - co_local);
  float4 bias = (float4)(0.0f);
  if (b_off >= 0) {
    const int b = b_off + g * cog + co_local;
    bias = (float4)(weights[b], lanes > 1 ? weights[b + 1] : 0.0f,
                    lanes > 2 ? weights[b + 2] : 0.0f, lanes > 3 ? weights[b + 3] : 0.0f);
  }
  const int co = g * cog + co_local;
  for (int t = 0; t < PSCHED_CONV_TILE_W; ++t) {
    const int ow = ow0 + t;
    if (ow >= out_w) break;
    const float4 v = psched_activate4(acc[t] + bias, act_kind, act);
    __global float* dst = out + out_off + (oh * out_w + ow) * out_c + co;
    if (mode == PSCHED_STORE && lanes == 4) {
      vstore4(v, 0, dst);
    } else {
      psched_write(dst, v.x, mode);
      if (lanes > 1) psched_write(dst + 1, v.y, mode);
      if (lanes > 2) psched_write(dst + 2, v.z, mode);
      if (lanes > 3) psched_write(dst + 3, v.w, mode);
    }
  }
}

// Depthwise convolution (groups == in_c, multiplier m = out_c / in_c): vectorised over 4
// consecutive output channels, which may span several groups; output channel co reads input
// channel co / m. Packed weights: [kh][kw][out_c + 3], zero-padded. Channel slices are
// [c_lo, c_hi) (whole groups), row slices as in psched_conv2d.
__kernel void psched_depthwise_conv2d(
    __global const float* in, int in_off, int in_h, int in_w, int in_c,
    __global float* out, int out_off, int out_h, int out_w, int out_c,
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
        __global const float* px = in + in_off + (ih * in_w + iw) * in_c;
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
    __global float* dst = out + out_off + (oh * out_w + ow) * out_c + co;
    if (lanes == 4) {
      vstore4(v, 0, dst);
    } else {
      dst[0] = v.x;
      if (lanes > 1) dst[1] = v.y;
      if (lanes > 2) dst[2] = v.z;
    }
  }
}
