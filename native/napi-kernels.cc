// N-API wrappers: system (features, threads, machine probes, large buffers), norms, RoPE, activations, matmul.
#include "napi-kernels.h"

#include "act.h"
#include "cpu.h"
#include "huge-pages.h"
#include "napi-args.h"
#include "norm.h"
#include "probe.h"
#include "rope.h"
#include "simd.h"
#include "threadpool.h"
#include "matmul.h"
#include "r16.h"

namespace loom::napi {

Napi::Value Features(const Napi::CallbackInfo& info) {
  const CpuFeatures& f = cpu_features();
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("avx2", f.avx2);
  o.Set("fma", f.fma);
  o.Set("f16c", f.f16c);
  o.Set("avx512f", f.avx512f);
  o.Set("avx512bw", f.avx512bw);
  o.Set("avx512vl", f.avx512vl);
  o.Set("avx512dq", f.avx512dq);
  o.Set("avx512vnni", f.avx512vnni);
  o.Set("avx512bf16", f.avx512bf16);
  o.Set("neon", f.neon);
  o.Set("kernels", simd().name);  // the instruction set the norm/act/attention kernels use
  return o;
}

Napi::Value SetThreads(const Napi::CallbackInfo& info) {
  set_thread_count(static_cast<int>(integer(info, 0, "threads", 1, 1024)));
  return info.Env().Undefined();
}

Napi::Value Threads(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), thread_count()); }

// (out, x, weight, rows, dim, eps)
Napi::Value RmsNorm(const Napi::CallbackInfo& info) {
  auto out = f32_array(info, 0, "out");
  auto x = f32_array(info, 1, "x");
  auto w = f32_array(info, 2, "weight");
  const int64_t rows = integer(info, 3, "rows", 0);
  const int64_t dim = integer(info, 4, "dim", 1);
  const double eps = number(info, 5, "eps");
  need(info, x.length, product(info, {rows, dim}, "x"), "x");
  need(info, out.length, rows * dim, "out");
  need(info, w.length, dim, "weight");
  rms_norm(out.data, x.data, w.data, rows, static_cast<int>(dim), eps);
  return info.Env().Undefined();
}

// (out, x, weight, bias, rows, dim, eps)
Napi::Value LayerNorm(const Napi::CallbackInfo& info) {
  auto out = f32_array(info, 0, "out");
  auto x = f32_array(info, 1, "x");
  auto w = f32_array(info, 2, "weight");
  auto bias = f32_array(info, 3, "bias");
  const int64_t rows = integer(info, 4, "rows", 0);
  const int64_t dim = integer(info, 5, "dim", 1);
  const double eps = number(info, 6, "eps");
  need(info, x.length, product(info, {rows, dim}, "x"), "x");
  need(info, out.length, rows * dim, "out");
  need(info, w.length, dim, "weight");
  need(info, bias.length, dim, "bias");
  layer_norm(out.data, x.data, w.data, bias.data, rows, static_cast<int>(dim), eps);
  return info.Env().Undefined();
}

// the optional trailing (scaling: Float64Array [freqScale, extFactor, attnFactor, corrLow, corrHigh],
// freqFactors: Float32Array [pairs] | null) of Rope and RopeMulti, from argument `at` on
static RopeScaling rope_scaling_args(const Napi::CallbackInfo& info, size_t at, int64_t pairs) {
  RopeScaling scaling;
  if (info.Length() > at && !info[at].IsUndefined()) {
    auto p = f64_array(info, at, "scaling");
    need(info, p.length, 5, "scaling");
    scaling.freq_scale = static_cast<float>(p.data[0]);
    scaling.ext_factor = static_cast<float>(p.data[1]);
    scaling.attn_factor = static_cast<float>(p.data[2]);
    scaling.corr_low = static_cast<float>(p.data[3]);
    scaling.corr_high = static_cast<float>(p.data[4]);
    if (!(scaling.freq_scale > 0)) throw Napi::RangeError::New(info.Env(), "scaling freqScale must be > 0");
  }
  if (info.Length() > at + 1 && !info[at + 1].IsNull() && !info[at + 1].IsUndefined()) {
    auto f = f32_array(info, at + 1, "freqFactors");
    need(info, f.length, pairs, "freqFactors");
    scaling.freq_factors = f.data;
  }
  return scaling;
}

// (x, positions, numHeads, headDim, ropeDim, base, neox[, scaling: Float64Array [freqScale, extFactor,
//  attnFactor, corrLow, corrHigh], freqFactors: Float32Array [ropeDim/2] | null])
Napi::Value Rope(const Napi::CallbackInfo& info) {
  auto x = f32_array(info, 0, "x");
  auto positions = i32_array(info, 1, "positions");
  const int64_t heads = integer(info, 2, "numHeads", 1);
  const int64_t head_dim = integer(info, 3, "headDim", 1);
  const int64_t rope_dim = integer(info, 4, "ropeDim", 0, head_dim);
  const double base = number(info, 5, "base");
  const bool neox = boolean(info, 6, "neox");
  if (rope_dim % 2 != 0) throw Napi::RangeError::New(info.Env(), "ropeDim must be even");
  if (base <= 0) throw Napi::RangeError::New(info.Env(), "base must be > 0");
  const int64_t n = static_cast<int64_t>(positions.length);
  need(info, x.length, product(info, {n, heads, head_dim}, "x"), "x");
  const RopeScaling scaling = rope_scaling_args(info, 7, rope_dim / 2);
  rope(x.data, positions.data, n, static_cast<int>(heads), static_cast<int>(head_dim), static_cast<int>(rope_dim), base, neox,
       scaling);
  return info.Env().Undefined();
}

// (x, positions [4 · n], numHeads, headDim, ropeDim, base, sections: Int32Array [4], mode: 1 mrope | 2 imrope | 3 vision
//  [, scaling, freqFactors: Float32Array [pairs] | null]) as Rope's
Napi::Value RopeMulti(const Napi::CallbackInfo& info) {
  auto x = f32_array(info, 0, "x");
  auto positions = i32_array(info, 1, "positions");
  const int64_t heads = integer(info, 2, "numHeads", 1);
  const int64_t head_dim = integer(info, 3, "headDim", 1);
  const int64_t mode = integer(info, 7, "mode", 1, 3);
  const bool vision = mode == static_cast<int64_t>(MropeMode::vision);
  // vision rotates 2·ropeDim dims (pairs i, i + ropeDim); the others ropeDim (pairs i, i + ropeDim/2)
  const int64_t rope_dim = integer(info, 4, "ropeDim", 0, vision ? head_dim / 2 : head_dim);
  const double base = number(info, 5, "base");
  auto sections = i32_array(info, 6, "sections");
  need(info, sections.length, 4, "sections");
  if (!vision && rope_dim % 2 != 0) throw Napi::RangeError::New(info.Env(), "ropeDim must be even");
  if (base <= 0) throw Napi::RangeError::New(info.Env(), "base must be > 0");
  int64_t sect_dims = 0;
  for (size_t i = 0; i < 4; i++) {
    if (sections.data[i] < 0) throw Napi::RangeError::New(info.Env(), "sections must be >= 0");
    sect_dims += sections.data[i];
  }
  if (sect_dims <= 0 || sect_dims > head_dim) throw Napi::RangeError::New(info.Env(), "sections must sum to 1..headDim");
  if (positions.length % 4 != 0) throw Napi::RangeError::New(info.Env(), "positions must hold 4 per token");
  const int64_t n = static_cast<int64_t>(positions.length / 4);
  need(info, x.length, product(info, {n, heads, head_dim}, "x"), "x");
  const RopeScaling scaling = rope_scaling_args(info, 8, vision ? rope_dim : rope_dim / 2);
  rope_multi(x.data, positions.data, n, static_cast<int>(heads), static_cast<int>(head_dim), static_cast<int>(rope_dim), base,
             sections.data, static_cast<MropeMode>(mode), scaling);
  return info.Env().Undefined();
}

namespace {

// (out, a, b, n): out[i] = op(a[i], b[i]) over three f32 arrays of n elements
Napi::Value elementwise(const Napi::CallbackInfo& info, const char* a_name, const char* b_name,
                        void (*kernel)(float*, const float*, const float*, int64_t)) {
  auto out = f32_array(info, 0, "out");
  auto a = f32_array(info, 1, a_name);
  auto b = f32_array(info, 2, b_name);
  const int64_t n = integer(info, 3, "n", 0, INT64_C(1) << 40);
  need(info, out.length, n, "out");
  need(info, a.length, n, a_name);
  need(info, b.length, n, b_name);
  kernel(out.data, a.data, b.data, n);
  return info.Env().Undefined();
}

}  // namespace

// (out, gate, up, n)
Napi::Value SiluMul(const Napi::CallbackInfo& info) { return elementwise(info, "gate", "up", silu_mul); }

// (out, x, n)
Napi::Value Gelu(const Napi::CallbackInfo& info) {
  auto out = f32_array(info, 0, "out");
  auto x = f32_array(info, 1, "x");
  const int64_t n = integer(info, 2, "n", 0, INT64_C(1) << 40);
  need(info, out.length, n, "out");
  need(info, x.length, n, "x");
  gelu(out.data, x.data, n);
  return info.Env().Undefined();
}

// (out, gate, up, n)
Napi::Value GeluMul(const Napi::CallbackInfo& info) { return elementwise(info, "gate", "up", gelu_mul); }

// (x, n, cap)
Napi::Value Softcap(const Napi::CallbackInfo& info) {
  auto x = f32_array(info, 0, "x");
  const int64_t n = integer(info, 1, "n", 0, INT64_C(1) << 40);
  const double cap = number(info, 2, "cap");
  need(info, x.length, n, "x");
  if (!(cap > 0)) throw Napi::RangeError::New(info.Env(), "softcap: cap must be > 0");
  softcap(x.data, n, static_cast<float>(cap));
  return info.Env().Undefined();
}

// (out, a, b, n)
Napi::Value Add(const Napi::CallbackInfo& info) { return elementwise(info, "a", "b", add); }

// (x, bias, rows): rows of bias.length
Napi::Value AddBias(const Napi::CallbackInfo& info) {
  auto x = f32_array(info, 0, "x");
  auto bias = f32_array(info, 1, "bias");
  const int64_t rows = integer(info, 2, "rows", 0);
  const int64_t dim = static_cast<int64_t>(bias.length);
  if (dim > INT32_MAX) throw Napi::RangeError::New(info.Env(), "bias is too long");
  need(info, x.length, product(info, {rows, dim}, "x"), "x");
  add_bias(x.data, bias.data, rows, static_cast<int>(dim));
  return info.Env().Undefined();
}

// (x, rows, n)
Napi::Value Softmax(const Napi::CallbackInfo& info) {
  auto x = f32_array(info, 0, "x");
  const int64_t rows = integer(info, 1, "rows", 0);
  const int64_t n = integer(info, 2, "n", 0);
  need(info, x.length, product(info, {rows, n}, "x"), "x");
  softmax(x.data, rows, static_cast<int>(n));
  return info.Env().Undefined();
}

// (row) → index of the largest value
Napi::Value Argmax(const Napi::CallbackInfo& info) {
  auto x = f32_array(info, 0, "row");
  if (x.length == 0) throw Napi::RangeError::New(info.Env(), "row is empty");
  return Napi::Number::New(info.Env(), static_cast<double>(argmax(x.data, static_cast<int64_t>(x.length))));
}

// (row, mask: Int32Array of ceil(row.length / 32) words)
Napi::Value ApplyTokenMask(const Napi::CallbackInfo& info) {
  auto row = f32_array(info, 0, "row");
  auto mask = i32_array(info, 1, "mask");
  need(info, mask.length, (static_cast<int64_t>(row.length) + 31) / 32, "mask");
  apply_token_mask(row.data, static_cast<int64_t>(row.length), mask.data);
  return info.Env().Undefined();
}

// (row, scale, logMinP (may be −∞), idx: Int32Array) → number of candidates
Napi::Value SampleCandidates(const Napi::CallbackInfo& info) {
  auto row = f32_array(info, 0, "row");
  const double scale = number(info, 1, "scale");
  if (!info[2].IsNumber()) throw Napi::TypeError::New(info.Env(), "logMinP must be a number");
  auto idx = i32_array(info, 3, "idx");
  need(info, idx.length, static_cast<int64_t>(row.length), "idx");
  const int64_t kept =
      sample_candidates(row.data, static_cast<int64_t>(row.length), scale, info[2].As<Napi::Number>().DoubleValue(), idx.data);
  return Napi::Number::New(info.Env(), static_cast<double>(kept));
}

// (weights: Float64Array, n, u) → index
Napi::Value DrawIndex(const Napi::CallbackInfo& info) {
  auto w = f64_array(info, 0, "weights");
  const int64_t n = integer(info, 1, "n", 1);
  need(info, w.length, n, "weights");
  return Napi::Number::New(info.Env(), static_cast<double>(draw_index(w.data, n, number(info, 2, "u"))));
}

// (out: Float64Array, row, idx: Int32Array | null, n, max) → Σ out[0..n)
Napi::Value ExpWeights(const Napi::CallbackInfo& info) {
  auto out = f64_array(info, 0, "out");
  auto row = f32_array(info, 1, "row");
  const int64_t n = integer(info, 3, "n", 0);
  const float max = static_cast<float>(number(info, 4, "max"));
  need(info, out.length, n, "out");
  const int32_t* idx = nullptr;
  if (info[2].IsNull()) {
    need(info, row.length, n, "row");
  } else {
    auto ids = i32_array(info, 2, "idx");
    need(info, ids.length, n, "idx");
    for (int64_t j = 0; j < n; j++)
      if (ids.data[j] < 0 || static_cast<size_t>(ids.data[j]) >= row.length)
        throw Napi::RangeError::New(info.Env(), "idx holds an index outside row");
    idx = ids.data;
  }
  return Napi::Number::New(info.Env(), exp_weights(out.data, row.data, idx, n, max));
}

namespace {
// bytes of a row of n values of a weight type, or −1 when n is not a whole number of blocks
int64_t row_bytes(int type, int64_t n) {
  const WeightTraits* t = weight_traits(type);
  if (!t) return -1;
  return n % t->block_values == 0 ? n / t->block_values * t->block_bytes : -1;
}

int64_t checked_row_bytes(const Napi::CallbackInfo& info, int type, int64_t n) {
  if (!is_supported_weight_type(type)) throw Napi::TypeError::New(info.Env(), "unsupported weight type " + std::to_string(type));
  const int64_t bytes = row_bytes(type, n);
  if (bytes < 0) throw Napi::RangeError::New(info.Env(), "row length " + std::to_string(n) + " is not a whole number of blocks");
  return bytes;
}

// An interleaved layout holds whole groups of rows only.
int64_t checked_row_count(const Napi::CallbackInfo& info, int type, int64_t n, const char* what) {
  if (r16_plain_type(type) >= 0 && n % kR16Rows != 0)
    throw Napi::RangeError::New(info.Env(), std::string(what) + " of a tensor interleaved by 16 rows must be a multiple of 16, got " + std::to_string(n));
  return n;
}
}  // namespace

// (out, x, rows, w, type, inFeatures, outFeatures)
Napi::Value Matmul(const Napi::CallbackInfo& info) {
  auto out = f32_array(info, 0, "out");
  auto x = f32_array(info, 1, "x");
  const int64_t rows = integer(info, 2, "rows", 0);
  auto w = u8_array(info, 3, "weight data");
  const int type = static_cast<int>(integer(info, 4, "type", 0, 255));
  const int64_t in = integer(info, 5, "inFeatures", 1);
  const int64_t outF = checked_row_count(info, type, integer(info, 6, "outFeatures", 1), "outFeatures");
  need(info, w.length, product(info, {checked_row_bytes(info, type, in), outF}, "weight data"), "weight data");
  need(info, x.length, product(info, {rows, in}, "x"), "x");
  need(info, out.length, product(info, {rows, outF}, "out"), "out");
  matmul(out.data, x.data, static_cast<int>(rows), w.data, type, static_cast<int>(in), static_cast<int>(outF));
  return info.Env().Undefined();
}

// (x, rows, inFeatures, out0, data0, type0, outFeatures0, out1, data1, …): matmul_set
Napi::Value MatmulSet(const Napi::CallbackInfo& info) {
  auto x = f32_array(info, 0, "x");
  const int64_t rows = integer(info, 1, "rows", 0);
  const int64_t in = integer(info, 2, "inFeatures", 1);
  need(info, x.length, product(info, {rows, in}, "x"), "x");
  const size_t n = (info.Length() - 3) / 4;
  if (info.Length() < 7 || (info.Length() - 3) % 4 != 0 || n > static_cast<size_t>(kMaxMatmulParts))
    throw Napi::RangeError::New(info.Env(), "matmulSet takes 1 to " + std::to_string(kMaxMatmulParts) + " (out, data, type, outFeatures) groups");
  MatmulPart parts[kMaxMatmulParts];
  for (size_t j = 0; j < n; j++) {
    const size_t a = 3 + 4 * j;
    auto out = f32_array(info, a, "out");
    auto w = u8_array(info, a + 1, "weight data");
    const int type = static_cast<int>(integer(info, a + 2, "type", 0, 255));
    const int64_t outF = checked_row_count(info, type, integer(info, a + 3, "outFeatures", 1), "outFeatures");
    need(info, w.length, product(info, {checked_row_bytes(info, type, in), outF}, "weight data"), "weight data");
    need(info, out.length, product(info, {rows, outF}, "out"), "out");
    parts[j] = {out.data, w.data, type, static_cast<int>(outF)};
  }
  matmul_set(x.data, static_cast<int>(rows), static_cast<int>(in), parts, static_cast<int>(n));
  return info.Env().Undefined();
}

// (out, table, type, dim, nRows, ids)
Napi::Value EmbedRows(const Napi::CallbackInfo& info) {
  auto out = f32_array(info, 0, "out");
  auto table = u8_array(info, 1, "table data");
  const int type = static_cast<int>(integer(info, 2, "type", 0, 255));
  const int64_t dim = integer(info, 3, "dim", 1);
  const int64_t n_rows = checked_row_count(info, type, integer(info, 4, "nRows", 1), "nRows");
  auto ids = i32_array(info, 5, "ids");
  need(info, table.length, product(info, {checked_row_bytes(info, type, dim), n_rows}, "table data"), "table data");
  need(info, out.length, product(info, {static_cast<int64_t>(ids.length), dim}, "out"), "out");
  for (size_t t = 0; t < ids.length; t++)
    if (ids.data[t] < 0 || ids.data[t] >= n_rows)
      throw Napi::RangeError::New(info.Env(), "token id " + std::to_string(ids.data[t]) + " outside the table (" +
                                                  std::to_string(n_rows) + " rows)");
  embed_rows(out.data, table.data, type, static_cast<int>(dim), static_cast<int>(n_rows), ids.data,
             static_cast<int>(ids.length));
  return info.Env().Undefined();
}

// (type) → { act, oneRow, fewRows, gemm, gemmMinRows, layout } | undefined: the kernels matmul
// runs for `type` on the instruction set now in use (matmul.h kernel_info)
Napi::Value KernelInfo(const Napi::CallbackInfo& info) {
  const int type = static_cast<int>(integer(info, 0, "type", 0, 255));
  loom::KernelInfo k;
  if (!kernel_info(type, &k)) return info.Env().Undefined();
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("act", k.act);
  o.Set("oneRow", k.one_row);
  o.Set("fewRows", k.few_rows);
  o.Set("gemm", k.gemm);
  o.Set("gemmMinRows", k.gemm_min_rows);
  o.Set("layout", k.layout);
  return o;
}

// (data, type, K, N): a tensor of N rows of K values of the plain type of `type` (an
// interleaved type, r16.h) rewritten, in place, into that layout (N a multiple of 16)
Napi::Value InterleaveR16(const Napi::CallbackInfo& info) {
  auto data = u8_array(info, 0, "data");
  const int type = static_cast<int>(integer(info, 1, "type", 0, 255));
  const int plain = r16_plain_type(type);
  if (plain < 0) throw Napi::TypeError::New(info.Env(), "type " + std::to_string(type) + " is not a layout interleaved by 16 rows");
  const int64_t K = integer(info, 2, "K", 1);
  const int64_t N = checked_row_count(info, type, integer(info, 3, "N", 1), "N");
  if (data.length != static_cast<size_t>(product(info, {checked_row_bytes(info, plain, K), N}, "data")))
    throw Napi::RangeError::New(info.Env(), "data must hold exactly N rows of K values of the plain type");
  interleave_r16(type, data.data, static_cast<int>(K), static_cast<int>(N));
  return info.Env().Undefined();
}

// (seconds, bits = 0) → { gflops, bits }: f32 FMA peak on every pool thread; bits 0 = the widest
Napi::Value ProbeFmaPeak(const Napi::CallbackInfo& info) {
  const double seconds = number(info, 0, "seconds");
  if (seconds <= 0 || seconds > 60) throw Napi::RangeError::New(info.Env(), "seconds must be in (0, 60]");
  const int64_t bits = info.Length() > 1 && !info[1].IsUndefined() ? integer(info, 1, "bits", 0, 512) : 0;
  if (bits != 0 && bits != 32 && bits != 256 && bits != 512) throw Napi::RangeError::New(info.Env(), "bits must be 0, 32, 256 or 512");
  const int used = bits == 0 ? probe_fma_widest_bits() : static_cast<int>(bits);
  const double gflops = probe_fma_peak(seconds, used);
  if (gflops < 0) throw Napi::RangeError::New(info.Env(), "this CPU has no " + std::to_string(used) + "-bit FMA");
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("gflops", gflops);
  o.Set("bits", used);
  return o;
}

// (seconds) → { gops, instruction }: integer multiply-add peak on every pool thread (probe.h)
Napi::Value ProbeInt8Peak(const Napi::CallbackInfo& info) {
  const double seconds = number(info, 0, "seconds");
  if (seconds <= 0 || seconds > 60) throw Napi::RangeError::New(info.Env(), "seconds must be in (0, 60]");
  const double gops = probe_int8_peak(seconds);
  const int kind = probe_int8_kind();
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("gops", gops);
  o.Set("instruction", kind == 512 ? "avx512:dpbusd" : kind == 256 ? "avx2:maddubs+madd" : "portable:scalar");
  return o;
}

// (bytes, seconds) → GB/s read by every pool thread from a buffer of `bytes`
Napi::Value ProbeReadBandwidth(const Napi::CallbackInfo& info) {
  const int64_t bytes = integer(info, 0, "bytes", 1 << 16, int64_t{1} << 40);
  const double seconds = number(info, 1, "seconds");
  if (seconds <= 0 || seconds > 60) throw Napi::RangeError::New(info.Env(), "seconds must be in (0, 60]");
  const double gbps = probe_read_bandwidth(bytes, seconds);
  if (gbps < 0) throw Napi::Error::New(info.Env(), "probeReadBandwidth: cannot allocate " + std::to_string(bytes) + " bytes");
  return Napi::Number::New(info.Env(), gbps);
}

// (bytes, populate?) → a zeroed ArrayBuffer on huge pages (huge-pages.h), its pages faulted
// in now when populate; freed when collected. Its size counts as external memory, so the
// collector knows what dropping it frees.
Napi::Value LargeBuffer(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  const int64_t bytes = integer(info, 0, "bytes", 0, int64_t{1} << 46);
  const bool populate = info.Length() > 1 && !info[1].IsUndefined() && boolean(info, 1, "populate");
  void* p = alloc_large(static_cast<size_t>(bytes), populate);
  if (!p) throw Napi::RangeError::New(env, "largeBuffer: cannot allocate " + std::to_string(bytes) + " bytes");
  Napi::MemoryManagement::AdjustExternalMemory(env, bytes);
  return Napi::ArrayBuffer::New(env, p, static_cast<size_t>(bytes), [](Napi::Env e, void* data, size_t* size) {
    Napi::MemoryManagement::AdjustExternalMemory(e, -static_cast<int64_t>(*size));
    free_large(data, *size);
    delete size;
  }, new size_t(static_cast<size_t>(bytes)));
}

}  // namespace loom::napi
