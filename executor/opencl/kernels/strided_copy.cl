// Data movement of the general tensor kinds over row-major tensors of any rank up to six:
// transpose, reshape, slice and concat along any axis are strided reads per output element.

// Arena position of element `flat` of a tensor stored as last-axis rows of `c` floats, `rs`
// floats apart (rs > c inside a concat's output).
inline int psched_row_position(int flat, int c, int rs) {
  return rs == c ? flat : (flat / c) * rs + flat % c;
}

// Writes output element (i0, ..., i5) of `dims` (lanes s0-s5, leading lanes 1) at element
// out_base + row * out_pitch + i5 of the output, row the index of (i0, ..., i4) (row-major:
// out_base 0 and out_pitch dims.s5), from input element base + sum(i_k * st_k), element
// indices counted row-major over each tensor's physical dims. Transpose: st are the input's
// strides in permutation order. Reshape: the identity strides. Slice (Gather at a constant
// index, Split): base the starts, st steps times strides (negative steps too). Concat along
// any axis: one launch per input, [outer][part] rows into the output's [outer][whole] rows at
// the input's offset. NDRange: (runs of PSCHED_RUN along axis 5 (kernels/elementwise.cl),
// axis 4, axes 0-3 flattened).
__kernel void psched_strided_copy(__global const float* in, int in_off, int in_c, int in_rs,
                                  __global float* out, int out_off, int out_c, int out_rs,
                                  int base, int8 st, int8 dims, int out_base, int out_pitch,
                                  int act_kind, float4 act) {
  const int i5 = get_global_id(0) * PSCHED_RUN;
  const int i4 = get_global_id(1);
  if (i5 >= dims.s5 || i4 >= dims.s4) return;
  const int lead = get_global_id(2);
  int rest = lead;
  const int i3 = rest % dims.s3; rest /= dims.s3;
  const int i2 = rest % dims.s2; rest /= dims.s2;
  const int i1 = rest % dims.s1;
  const int i0 = rest / dims.s1;
  int src = base + i0 * st.s0 + i1 * st.s1 + i2 * st.s2 + i3 * st.s3 + i4 * st.s4 + i5 * st.s5;
  int dst = out_base + (lead * dims.s4 + i4) * out_pitch + i5;
  const int n = min(PSCHED_RUN, dims.s5 - i5);
  for (int j = 0; j < n; ++j, src += st.s5, ++dst) {
    out[out_off + psched_row_position(dst, out_c, out_rs)] =
        psched_activate(in[in_off + psched_row_position(src, in_c, in_rs)], act_kind, act);
  }
}
