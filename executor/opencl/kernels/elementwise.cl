// Element-wise kernels: broadcast binary ops, standalone activation, softmax over channels.

#define PSCHED_BINARY_ADD 0
#define PSCHED_BINARY_MUL 1
#define PSCHED_BINARY_SUB 2
#define PSCHED_BINARY_DIV 3

// Consecutive elements along the last axis one work-item of the general tensor kernels
// handles: on PoCL a work-item per element spends more on its index arithmetic than on the
// element (psched_activation below and kernels/strided_copy.cl use the same run).
#define PSCHED_RUN 16

// out = act(a (op) b) under numpy broadcasting, any rank up to six. The factory right-aligns
// both operands to the output's rank and pads every shape to six axes with leading 1s; `dims`
// are the output's extents and `*_st` each tensor's element strides per axis in its buffer
// (pixel strides folded in; 0 where an operand broadcasts), lanes s0-s5. Either operand may
// live in the weight store (a constant), the other in the arena. NDRange: (runs of
// PSCHED_RUN along axis 5, axis 4, axes 0-3 flattened).
__kernel void psched_binary(__global const float* a, int a_off, int8 a_st,
                            __global const float* b, int b_off, int8 b_st,
                            __global float* out, int out_off, int8 out_st, int8 dims, int op,
                            int act_kind, float4 act) {
  const int i5 = get_global_id(0) * PSCHED_RUN;
  const int i4 = get_global_id(1);
  if (i5 >= dims.s5 || i4 >= dims.s4) return;
  int rest = get_global_id(2);
  const int i3 = rest % dims.s3; rest /= dims.s3;
  const int i2 = rest % dims.s2; rest /= dims.s2;
  const int i1 = rest % dims.s1;
  const int i0 = rest / dims.s1;
  int ia = a_off + i0 * a_st.s0 + i1 * a_st.s1 + i2 * a_st.s2 + i3 * a_st.s3 + i4 * a_st.s4 +
           i5 * a_st.s5;
  int ib = b_off + i0 * b_st.s0 + i1 * b_st.s1 + i2 * b_st.s2 + i3 * b_st.s3 + i4 * b_st.s4 +
           i5 * b_st.s5;
  int io = out_off + i0 * out_st.s0 + i1 * out_st.s1 + i2 * out_st.s2 + i3 * out_st.s3 +
           i4 * out_st.s4 + i5 * out_st.s5;
  const int n = min(PSCHED_RUN, dims.s5 - i5);
  for (int j = 0; j < n; ++j, ia += a_st.s5, ib += b_st.s5, io += out_st.s5) {
    const float x = a[ia];
    const float y = b[ib];
    const float v = op == PSCHED_BINARY_ADD   ? x + y
                    : op == PSCHED_BINARY_MUL ? x * y
                    : op == PSCHED_BINARY_SUB ? x - y
                                              : x / y;
    out[io] = psched_activate(v, act_kind, act);
  }
}

// out[i] = act(in[i]); in place when in and out are the same arena range (the epilogue that
// applies a fused activation after input-channel partial sums). A work-item takes a run of
// PSCHED_RUN channels of one pixel.
__kernel void psched_activation(__global const float* in, int in_off, int in_ps,
                                __global float* out, int out_off, int out_ps, int channels,
                                int pixels, int act_kind, float4 act) {
  const int c = get_global_id(0) * PSCHED_RUN;
  const int p = get_global_id(1);
  if (c >= channels || p >= pixels) return;
  __global const float* x = in + in_off + p * in_ps + c;
  __global float* y = out + out_off + p * out_ps + c;
  const int n = min(PSCHED_RUN, channels - c);
  for (int j = 0; j < n; ++j) y[j] = psched_activate(x[j], act_kind, act);
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
