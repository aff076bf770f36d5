// Data-movement kernels: concat (one channel slice per input), constant pad, resize,
// flatten (NHWC -> NCHW element order).

// Copies a [pixels][src_c] tensor into channels [dst_c_begin, dst_c_begin + src_c) of the
// output tensor.
__kernel void psched_copy_channels(__global const float* in, int in_off, int in_ps, int src_c,
                                   __global float* out, int out_off, int out_ps, int dst_c_begin,
                                   int pixels, int act_kind, float4 act) {
  const int c = get_global_id(0);
  const int p = get_global_id(1);
  if (c >= src_c || p >= pixels) return;
  out[out_off + p * out_ps + dst_c_begin + c] =
      psched_activate(in[in_off + p * in_ps + c], act_kind, act);
}

__kernel void psched_pad(__global const float* in, int in_off, int in_ps, int in_h, int in_w,
                         int in_c, __global float* out, int out_off, int out_ps, int out_h,
                         int out_w, int out_c,
                         int top, int left, int c_before, float value, int act_kind,
                         float4 act) {
  const int c = get_global_id(0);
  const int w = get_global_id(1);
  const int h = get_global_id(2);
  if (c >= out_c || w >= out_w || h >= out_h) return;
  const int ih = h - top;
  const int iw = w - left;
  const int ic = c - c_before;
  const bool inside = ih >= 0 && ih < in_h && iw >= 0 && iw < in_w && ic >= 0 && ic < in_c;
  const float v = inside ? in[in_off + (ih * in_w + iw) * in_ps + ic] : value;
  out[out_off + (h * out_w + w) * out_ps + c] = psched_activate(v, act_kind, act);
}

// Coordinate transforms, in model::CoordinateTransform order.
#define PSCHED_HALF_PIXEL 0
#define PSCHED_ASYMMETRIC 1
#define PSCHED_ALIGN_CORNERS 2
#define PSCHED_PYTORCH_HALF_PIXEL 3
// Nearest rounding, in model::NearestRounding order.
#define PSCHED_ROUND_PREFER_FLOOR 0
#define PSCHED_ROUND_PREFER_CEIL 1
#define PSCHED_FLOOR 2
#define PSCHED_CEIL 3

inline float psched_source_coord(int x, float scale, int in_len, int out_len, int transform) {
  switch (transform) {
    case PSCHED_HALF_PIXEL: return ((float)x + 0.5f) / scale - 0.5f;
    case PSCHED_ALIGN_CORNERS:
      return out_len == 1 ? 0.0f : (float)x * (float)(in_len - 1) / (float)(out_len - 1);
    case PSCHED_PYTORCH_HALF_PIXEL:
      return out_len > 1 ? ((float)x + 0.5f) / scale - 0.5f : 0.0f;
    default: return (float)x / scale;
  }
}

inline int psched_nearest(float x, int rounding, int in_len) {
  float r;
  switch (rounding) {
    case PSCHED_ROUND_PREFER_FLOOR: r = ceil(x - 0.5f); break;
    case PSCHED_ROUND_PREFER_CEIL: r = floor(x + 0.5f); break;
    case PSCHED_CEIL: r = ceil(x); break;
    default: r = floor(x); break;
  }
  return clamp((int)r, 0, in_len - 1);
}

__kernel void psched_resize(__global const float* in, int in_off, int in_ps, int in_h,
                            int in_w, int channels, __global float* out, int out_off,
                            int out_ps, int out_h, int out_w, int linear, int transform, int rounding, float scale_h,
                            float scale_w, int act_kind, float4 act) {
  const int c = get_global_id(0);
  const int w = get_global_id(1);
  const int h = get_global_id(2);
  if (c >= channels || w >= out_w || h >= out_h) return;
  const float y = psched_source_coord(h, scale_h, in_h, out_h, transform);
  const float x = psched_source_coord(w, scale_w, in_w, out_w, transform);
  float v;
  if (linear) {
    const float yc = clamp(y, 0.0f, (float)(in_h - 1));
    const float xc = clamp(x, 0.0f, (float)(in_w - 1));
    const int y0 = (int)floor(yc);
    const int x0 = (int)floor(xc);
    const int y1 = min(y0 + 1, in_h - 1);
    const int x1 = min(x0 + 1, in_w - 1);
    const float fy = yc - (float)y0;
    const float fx = xc - (float)x0;
    __global const float* base = in + in_off + c;
    const float v00 = base[(y0 * in_w + x0) * in_ps];
    const float v01 = base[(y0 * in_w + x1) * in_ps];
    const float v10 = base[(y1 * in_w + x0) * in_ps];
    const float v11 = base[(y1 * in_w + x1) * in_ps];
    v = (v00 * (1.0f - fx) + v01 * fx) * (1.0f - fy) + (v10 * (1.0f - fx) + v11 * fx) * fy;
  } else {
    const int iy = psched_nearest(y, rounding, in_h);
    const int ix = psched_nearest(x, rounding, in_w);
    v = in[in_off + (iy * in_w + ix) * in_ps + c];
  }
  out[out_off + (h * out_w + w) * out_ps + c] = psched_activate(v, act_kind, act);
}

__kernel void psched_flatten(__global const float* in, int in_off, int in_ps, int h_extent,
                             int w_extent, int channels, __global float* out, int out_off, int act_kind,
                             float4 act) {
  const int c = get_global_id(0);
  const int w = get_global_id(1);
  const int h = get_global_id(2);
  if (c >= channels || w >= w_extent || h >= h_extent) return;
  out[out_off + (c * h_extent + h) * w_extent + w] =
      psched_activate(in[in_off + (h * w_extent + w) * in_ps + c], act_kind, act);
}
