// Shared helpers for every psched compute kernel. All tensors are f32 batch 1 (channels-last
// images, or row-major tensors whose "pixels" are their last-axis rows) and live in one arena
// (or the weight store); kernels receive base pointers plus element offsets so the
// same binary works on fine-grained SVM, coarse-grained SVM and plain buffers. Each activation
// tensor also comes with its pixel stride (`*_ps`, floats between consecutive pixels), which
// exceeds its channel count when it lives inside a channel slice of a concat output.

// Activation kinds, in model::ActivationKind order.
#define PSCHED_ACT_NONE 0
#define PSCHED_ACT_RELU 1
#define PSCHED_ACT_CLIP 2
#define PSCHED_ACT_SIGMOID 3
#define PSCHED_ACT_HARD_SIGMOID 4
#define PSCHED_ACT_HARD_SWISH 5
#define PSCHED_ACT_SILU 6
#define PSCHED_ACT_GELU 7
#define PSCHED_ACT_TANH 8
#define PSCHED_ACT_ERF 9
#define PSCHED_ACT_EXP 10
#define PSCHED_ACT_LOG 11
#define PSCHED_ACT_SQRT 12
#define PSCHED_ACT_RECIPROCAL 13
#define PSCHED_ACT_NEG 14
#define PSCHED_ACT_ABS 15
#define PSCHED_ACT_POW 16

// How a kernel writes its output (docs/opencl.md, "Slices and how partial sums combine").
#define PSCHED_STORE 0       // plain store
#define PSCHED_ADD 1         // out += value; only this queue touches the output
#define PSCHED_ATOMIC_ADD 2  // out += value with a CAS loop; other devices may add concurrently

// params = (min, max, alpha, beta) of model::Activation; every model::ActivationKind has a case,
// so any op a GPU kernel computes can carry any fused activation.
inline float psched_activate(float x, int kind, float4 params) {
  switch (kind) {
    case PSCHED_ACT_RELU: return fmax(x, 0.0f);
    case PSCHED_ACT_CLIP: return fmin(fmax(x, params.x), params.y);
    case PSCHED_ACT_SIGMOID: return 1.0f / (1.0f + exp(-x));
    case PSCHED_ACT_HARD_SIGMOID: return fmin(fmax(params.z * x + params.w, 0.0f), 1.0f);
    case PSCHED_ACT_HARD_SWISH: return x * fmin(fmax(x / 6.0f + 0.5f, 0.0f), 1.0f);
    case PSCHED_ACT_SILU: return x / (1.0f + exp(-x));
    case PSCHED_ACT_GELU: return 0.5f * x * (1.0f + erf(x * 0.70710678f));
    case PSCHED_ACT_TANH: return tanh(x);
    case PSCHED_ACT_ERF: return erf(x);
    case PSCHED_ACT_EXP: return exp(x);
    case PSCHED_ACT_LOG: return log(x);
    case PSCHED_ACT_SQRT: return sqrt(x);
    case PSCHED_ACT_RECIPROCAL: return 1.0f / x;
    case PSCHED_ACT_NEG: return -x;
    case PSCHED_ACT_ABS: return fabs(x);
    // The exponent is alpha; squaring (LayerNorm's decomposed variance) stays exact.
    case PSCHED_ACT_POW: return params.z == 2.0f ? x * x : pow(x, params.z);
    default: return x;
  }
}

inline float4 psched_activate4(float4 x, int kind, float4 params) {
  switch (kind) {
    case PSCHED_ACT_NONE: return x;
    case PSCHED_ACT_RELU: return fmax(x, (float4)(0.0f));
    case PSCHED_ACT_CLIP: return fmin(fmax(x, (float4)(params.x)), (float4)(params.y));
    default:
      return (float4)(psched_activate(x.x, kind, params), psched_activate(x.y, kind, params),
                      psched_activate(x.z, kind, params), psched_activate(x.w, kind, params));
  }
}

// Float add that other work-items and other SVM devices may race with: OpenCL 1.2 has no
// atomic float add, so compare-and-swap the bit pattern until no one interfered.
inline void psched_atomic_add(__global float* p, float value) {
  volatile __global uint* word = (volatile __global uint*)p;
  uint expected = *word;
  for (;;) {
    uint desired = as_uint(as_float(expected) + value);
    uint seen = atomic_cmpxchg(word, expected, desired);
    if (seen == expected) return;
    expected = seen;
  }
}

inline void psched_write(__global float* p, float value, int mode) {
  if (mode == PSCHED_STORE) {
    *p = value;
  } else if (mode == PSCHED_ADD) {
    *p += value;
  } else {
    psched_atomic_add(p, value);
  }
}

// Fills a [pixels][channels] tensor (pixel stride out_ps) with value; the zero-init that
// input-channel slices accumulate onto.
__kernel void psched_fill(__global float* out, int out_off, int out_ps, int channels,
                          int pixels, float value) {
  const int c = get_global_id(0);
  const int p = get_global_id(1);
  if (c < channels && p < pixels) out[out_off + p * out_ps + c] = value;
}
