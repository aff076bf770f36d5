// Max / average pooling and global average pooling, NHWC, one work-item per output element
// (dim 0 = channel, so neighbouring work-items read neighbouring floats).
//
// Average pooling divides by the number of window positions inside [-pad_t, h_limit) x
// [-pad_l, w_limit): with count_include_pad the host passes the input extent plus the
// *declared* padding (ceil_mode's extra rows/columns are never counted, as in ONNX), without it
// the input extent itself.
__kernel void psched_pool(
    __global const float* in, int in_off, int in_ps, int in_h, int in_w, int channels,
    __global float* out, int out_off, int out_ps, int out_h, int out_w,
    int k_h, int k_w, int s_h, int s_w, int d_h, int d_w, int pad_t, int pad_l,
    int is_max, int count_top, int count_left, int h_limit, int w_limit, int act_kind,
    float4 act) {
  const int c = get_global_id(0);
  const int ow = get_global_id(1);
  const int oh = get_global_id(2);
  if (c >= channels || ow >= out_w || oh >= out_h) return;
  float acc = is_max ? -INFINITY : 0.0f;
  int count = 0;
  for (int r = 0; r < k_h; ++r) {
    const int ih = oh * s_h - pad_t + r * d_h;
    for (int s = 0; s < k_w; ++s) {
      const int iw = ow * s_w - pad_l + s * d_w;
      if (ih >= -count_top && ih < h_limit && iw >= -count_left && iw < w_limit) ++count;
      if (ih < 0 || ih >= in_h || iw < 0 || iw >= in_w) continue;
      const float x = in[in_off + (ih * in_w + iw) * in_ps + c];
      acc = is_max ? fmax(acc, x) : acc + x;
    }
  }
  if (!is_max) acc = count > 0 ? acc / (float)count : 0.0f;
  out[out_off + (oh * out_w + ow) * out_ps + c] = psched_activate(acc, act_kind, act);
}

__kernel void psched_global_avg_pool(__global const float* in, int in_off, int in_ps,
                                     int pixels, int channels, __global float* out, int out_off,
                                     int act_kind, float4 act) {
  const int c = get_global_id(0);
  if (c >= channels) return;
  float acc = 0.0f;
  for (int p = 0; p < pixels; ++p) acc += in[in_off + p * in_ps + c];
  out[out_off + c] = psched_activate(acc / (float)pixels, act_kind, act);
}
