// Fully connected: out[o] = act(bias[o] + sum_i W[o][i] * x[i]) with W row-major [out][in] and
// x the input tensor in NHWC element order. One work-item per output feature of the slice
// [o_begin, o_begin + global size); input-feature slices [i_begin, i_end) write with `mode`.
__kernel void psched_fully_connected(
    __global const float* in, int in_off, __global float* out, int out_off,
    __global const float* weights, int w_off, int b_off, int in_features,
    int o_begin, int i_begin, int i_end, int mode, int act_kind, float4 act) {
  const int o = o_begin + get_global_id(0);
  __global const float* w = weights + w_off + o * in_features;
  __global const float* x = in + in_off;
  float4 acc4 = (float4)(0.0f);
  int i = i_begin;
  for (; i + 4 <= i_end; i += 4) acc4 = fma(vload4(0, w + i), vload4(0, x + i), acc4);
  float acc = acc4.x + acc4.y + acc4.z + acc4.w;
  for (; i < i_end; ++i) acc = fma(w[i], x[i], acc);
  if (b_off >= 0) acc += weights[b_off + o];
  psched_write(out + out_off + o, psched_activate(acc, act_kind, act), mode);
}
