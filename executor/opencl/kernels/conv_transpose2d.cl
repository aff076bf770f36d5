// 2-D transposed convolution (ONNX ConvTranspose), NHWC, gathered per output element so no
// two work-items write the same address (a scatter from the input would need atomics).
// Output (oh, ow) takes input row ih through tap kh when oh + pad_t - kh * d_h = ih * s_h;
// rows no tap reaches (output_padding) get the bias alone. Weights are the model's OHWI filter
// [cout][kh][kw][cin/groups], contiguous along cin like the input pixel, then the bias.
__kernel void psched_conv_transpose2d(
    __global const float* in, int in_off, int in_ps, int in_h, int in_w,
    __global float* out, int out_off, int out_ps, int out_h, int out_w, int out_c,
    __global const float* weights, int b_off, int k_h, int k_w, int s_h, int s_w, int d_h,
    int d_w, int pad_t, int pad_l, int cig, int cog, int act_kind, float4 act) {
  const int oc = get_global_id(0);
  const int ow = get_global_id(1);
  const int oh = get_global_id(2);
  if (oc >= out_c || ow >= out_w || oh >= out_h) return;
  const int group = oc / cog;
  float acc = b_off >= 0 ? weights[b_off + oc] : 0.0f;
  for (int kh = 0; kh < k_h; ++kh) {
    const int th = oh + pad_t - kh * d_h;
    if (th < 0 || th % s_h != 0 || th / s_h >= in_h) continue;
    const int ih = th / s_h;
    for (int kw = 0; kw < k_w; ++kw) {
      const int tw = ow + pad_l - kw * d_w;
      if (tw < 0 || tw % s_w != 0 || tw / s_w >= in_w) continue;
      __global const float* x = in + in_off + (ih * in_w + tw / s_w) * in_ps + group * cig;
      __global const float* f = weights + ((oc * k_h + kh) * k_w + kw) * cig;
      float4 acc4 = (float4)(0.0f);
      int ic = 0;
      for (; ic + 4 <= cig; ic += 4) acc4 = fma(vload4(0, x + ic), vload4(0, f + ic), acc4);
      for (; ic < cig; ++ic) acc = fma(x[ic], f[ic], acc);
      acc += (acc4.x + acc4.y) + (acc4.z + acc4.w);
    }
  }
  out[out_off + (oh * out_w + ow) * out_ps + oc] = psched_activate(acc, act_kind, act);
}
