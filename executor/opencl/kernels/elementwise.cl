// Element-wise kernels: broadcast binary ops, standalone activation, softmax over channels.

#define PSCHED_BINARY_ADD 0
#define PSCHED_BINARY_MUL 1
#define PSCHED_BINARY_SUB 2

// out = act(a (op) b) with NHWC broadcasting: an operand extent of 1 along h, w or c repeats.
// Either operand may live in the weight store (a constant), the other in the arena.
__kernel void psched_binary(
    __global const float* a, int a_off, int a_ps, int a_h, int a_w, int a_c,
    __global const float* b, int b_off, int b_ps, int b_h, int b_w, int b_c,
    __global float* out, int out_off, int out_ps, int out_h, int out_w, int out_c,
    int op, int act_kind, float4 act) {
  const int c = get_global_id(0);
  const int w = get_global_id(1);
  const int h = get_global_id(2);
  if (c >= out_c || w >= out_w || h >= out_h) return;
  const float x = a[a_off + ((a_h == 1 ? 0 : h) * a_w + (a_w == 1 ? 0 : w)) * a_ps +
                    (a_c == 1 ? 0 : c)];
  const float y = b[b_off + ((b_h == 1 ? 0 : h) * b_w + (b_w == 1 ? 0 : w)) * b_ps +
                    (b_c == 1 ? 0 : c)];
  const float v = op == PSCHED_BINARY_ADD ? x + y : (op == PSCHED_BINARY_MUL ? x * y : x - y);
  out[out_off + (h * out_w + w) * out_ps + c] = psched_activate(v, act_kind, act);
}

// out[i] = act(in[i]); in place when in and out are the same arena range (the epilogue that
// applies a fused activation after input-channel partial sums).
__kernel void psched_activation(__global const float* in, int in_off, int in_ps,
                                __global float* out, int out_off, int out_ps, int channels,
                                int pixels, int act_kind, float4 act) {
  const int c = get_global_id(0);
  const int p = get_global_id(1);
  if (c < channels && p < pixels) {
    out[out_off + p * out_ps + c] = psched_activate(in[in_off + p * in_ps + c], act_kind, act);
  }
}

// Softmax over the channels of each pixel; one work-item per pixel, max-subtracted.
__kernel void psched_softmax(__global const float* in, int in_off, int in_ps,
                             __global float* out, int out_off, int out_ps, int pixels,
                             int channels, int act_kind,
                             float4 act) {
  const int p = get_global_id(0);
  if (p >= pixels) return;
  __global const float* x = in + in_off + p * in_ps;
  __global float* y = out + out_off + p * out_ps;
  float m = -INFINITY;
  for (int c = 0; c < channels; ++c) m = fmax(m, x[c]);
  float sum = 0.0f;
  for (int c = 0; c < channels; ++c) sum += exp(x[c] - m);
  const float inv = 1.0f / sum;
  for (int c = 0; c < channels; ++c) y[c] = psched_activate(exp(x[c] - m) * inv, act_kind, act);
}
