// Dumps what llama.cpp's mtmd makes of one image: the image embeddings the text model reads
// (mtmd_encode_chunk, as llama-mtmd-cli and llama-server run it), the prompt's chunks around
// them (the marker's begin/end tokens), and the preprocessed pixels (the clip_image_f32 entries
// the encoder ran on). loom's vision goldens come from it (scripts/vision-goldens.mjs builds and
// runs it).
//
//   mtmd-embeddings TEXT.gguf MMPROJ.gguf IMAGE OUT.json [--threads N] [--flash-attn on|off|auto]
//                   [--no-pixels] [--prompt TEXT] [--generate N]
//
// OUT.json: { n_embd, non_causal, chunks: [{ type: "text", tokens } | { type: "image", n_tokens,
// nx, ny, n_pos, embeddings }], pixels: [{ nx, ny, data }] }, every float array the base64 of its
// little-endian f32 bytes. Pixels are dumped for the projector types whose preprocessor this
// file knows (preprocessor_for below; others leave "pixels" out). The prompt is the media marker
// alone unless --prompt gives a text holding it (tokenized with special tokens: BOS, and the
// marker's begin/end text parsed as special tokens). With --generate N the prompt is evaluated
// as llama-mtmd-cli does (mtmd_helper_eval_chunks: the image's tokens non-causal where the
// model wants it) and OUT.json adds "n_past", the last prompt position's "logits" and N greedy
// "tokens" (argmax, no sampler).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "clip-impl.h"
#include "clip.h"
#include "llama.h"
#include "mtmd-helper.h"
#include "mtmd-image.h"
#include "mtmd.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace {

std::string base64(const void* data, size_t n) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* p = static_cast<const unsigned char*>(data);
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (size_t i = 0; i < n; i += 3) {
    const unsigned v = p[i] << 16 | (i + 1 < n ? p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
    out += t[v >> 18 & 63];
    out += t[v >> 12 & 63];
    out += i + 1 < n ? t[v >> 6 & 63] : '=';
    out += i + 2 < n ? t[v & 63] : '=';
  }
  return out;
}

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "mtmd-embeddings: %s\n", why.c_str());
  std::exit(1);
}

// the preprocessor mtmd.cpp picks for the projector type (mtmd_context's constructor), for the
// types loom's goldens need; nullptr: pixels are not dumped
std::unique_ptr<mtmd_image_preprocessor> preprocessor_for(clip_ctx* ctx) {
  switch (clip_get_projector_type(ctx)) {
    case PROJECTOR_TYPE_GEMMA3:
      return std::make_unique<mtmd_image_preprocessor_fixed_size>(ctx);
    case PROJECTOR_TYPE_GEMMA4V:
      return std::make_unique<mtmd_image_preprocessor_dyn_size>(ctx);
    default:
      return nullptr;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) die("usage: mtmd-embeddings TEXT.gguf MMPROJ.gguf IMAGE OUT.json [--threads N] [--flash-attn on|off|auto] [--no-pixels]");
  const char* text_path = argv[1];
  const char* mmproj_path = argv[2];
  const char* image_path = argv[3];
  const char* out_path = argv[4];
  int threads = 2;
  llama_flash_attn_type fa = LLAMA_FLASH_ATTN_TYPE_AUTO;
  bool pixels = true;
  std::string prompt = mtmd_default_marker();
  bool custom_prompt = false;
  int generate = 0;
  for (int i = 5; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--flash-attn" && i + 1 < argc) {
      const std::string v = argv[++i];
      fa = v == "on" ? LLAMA_FLASH_ATTN_TYPE_ENABLED : v == "off" ? LLAMA_FLASH_ATTN_TYPE_DISABLED : LLAMA_FLASH_ATTN_TYPE_AUTO;
    } else if (a == "--no-pixels") pixels = false;
    else if (a == "--prompt" && i + 1 < argc) prompt = argv[++i], custom_prompt = true;
    else if (a == "--generate" && i + 1 < argc) generate = std::atoi(argv[++i]);
    else die("unknown argument " + a);
  }

  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(text_path, mp);
  if (!model) die(std::string("cannot load the text model ") + text_path);

  mtmd_context_params cp = mtmd_context_params_default();
  cp.use_gpu = false;
  cp.n_threads = threads;
  cp.flash_attn_type = fa;
  cp.warmup = false;
  cp.print_timings = false;
  mtmd_context* ctx = mtmd_init_from_file(mmproj_path, model, cp);
  if (!ctx) die(std::string("cannot load the projector ") + mmproj_path);

  mtmd_bitmap* bitmap = mtmd_helper_bitmap_init_from_file(ctx, image_path, false, mtmd_helper_init_opt_default()).bitmap;
  if (!bitmap) die(std::string("cannot read the image ") + image_path);

  mtmd_input_chunks* chunks = mtmd_input_chunks_init();
  const mtmd_input_text text{prompt.c_str(), prompt.size(), custom_prompt, true};
  const mtmd_bitmap* bitmaps[] = {bitmap};
  if (mtmd_tokenize(ctx, chunks, &text, bitmaps, 1) != 0) die("mtmd_tokenize failed");

  const int n_embd = llama_model_n_embd_inp(model);
  std::string json = "{\"n_embd\":" + std::to_string(n_embd) + ",\"chunks\":[";
  bool non_causal = false;
  for (size_t i = 0; i < mtmd_input_chunks_size(chunks); i++) {
    const mtmd_input_chunk* chunk = mtmd_input_chunks_get(chunks, i);
    if (i > 0) json += ",";
    if (mtmd_input_chunk_get_type(chunk) == MTMD_INPUT_CHUNK_TYPE_TEXT) {
      size_t n = 0;
      const llama_token* tokens = mtmd_input_chunk_get_tokens_text(chunk, &n);
      json += "{\"type\":\"text\",\"tokens\":[";
      for (size_t t = 0; t < n; t++) json += (t ? "," : "") + std::to_string(tokens[t]);
      json += "]}";
      continue;
    }
    const mtmd_image_tokens* image = mtmd_input_chunk_get_tokens_image(chunk);
    non_causal = non_causal || mtmd_decode_use_non_causal(ctx, chunk);
    const auto t0 = std::chrono::steady_clock::now();
    if (mtmd_encode_chunk(ctx, chunk) != 0) die("mtmd_encode_chunk failed");
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "mtmd-embeddings: image encoded in %.0f ms\n", ms);
    const size_t n_tokens = mtmd_input_chunk_get_n_tokens(chunk);
    // the token grid (deprecated getters, but the only ones for every position type)
    const size_t grid_x = mtmd_image_tokens_get_nx(image), grid_y = mtmd_image_tokens_get_ny(image);
    const float* embd = mtmd_get_output_embd(ctx);
    json += "{\"type\":\"image\",\"n_tokens\":" + std::to_string(n_tokens) +
            ",\"nx\":" + std::to_string(grid_x) + ",\"ny\":" + std::to_string(grid_y) +
            ",\"n_pos\":" + std::to_string(mtmd_input_chunk_get_n_pos(chunk)) +
            ",\"embeddings\":\"" + base64(embd, n_tokens * n_embd * sizeof(float)) + "\"}";
  }
  json += "],\"non_causal\":";
  json += non_causal ? "true" : "false";

  if (generate > 0) {
    llama_context_params lp = llama_context_default_params();
    lp.n_ctx = 512;
    lp.n_batch = 512;
    lp.n_threads = lp.n_threads_batch = threads;
    llama_context* lctx = llama_init_from_model(model, lp);
    if (!lctx) die("cannot create a llama context");
    llama_pos n_past = 0;
    if (mtmd_helper_eval_chunks(ctx, lctx, chunks, 0, 0, lp.n_batch, true, &n_past) != 0) die("mtmd_helper_eval_chunks failed");
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    const float* logits = llama_get_logits_ith(lctx, -1);
    json += ",\"n_past\":" + std::to_string(n_past) + ",\"logits\":\"" + base64(logits, (size_t)n_vocab * sizeof(float)) + "\",\"tokens\":[";
    for (int g = 0; g < generate; g++) {
      logits = llama_get_logits_ith(lctx, -1);
      llama_token best = 0;
      for (int v = 1; v < n_vocab; v++) if (logits[v] > logits[best]) best = v;
      json += (g ? "," : "") + std::to_string(best);
      llama_batch b = llama_batch_get_one(&best, 1);
      if (llama_decode(lctx, b) != 0) die("llama_decode failed");
    }
    json += "]";
    llama_free(lctx);
  }

  if (pixels) {
    // a second clip context of the same file, for its preprocessor (mtmd keeps its own private)
    clip_context_params clp{};
    clp.use_gpu = false;
    clp.flash_attn_type = CLIP_FLASH_ATTN_TYPE_AUTO;
    clp.warmup = false;
    clip_init_result cr = clip_init(mmproj_path, clp);
    if (!cr.ctx_v) die("clip_init found no vision encoder");
    std::unique_ptr<mtmd_image_preprocessor> pre = preprocessor_for(cr.ctx_v);
    if (pre) {
      clip_image_u8 img;
      const int nx = mtmd_bitmap_get_nx(bitmap), ny = mtmd_bitmap_get_ny(bitmap);
      const unsigned char* data = mtmd_bitmap_get_data(bitmap);
      img.set_size({nx, ny}, false);
      img.cpy_buf(std::vector<uint8_t>(data, data + (size_t)nx * ny * 3));
      mtmd_image_preproc_out out = pre->preprocess(img);
      json += ",\"pixels\":[";
      for (size_t e = 0; e < out.entries.size(); e++) {
        const clip_image_f32& f = out.entries[e];
        const std::vector<float>& buf = f.get_ro_buf();
        json += (e ? ",{" : "{");
        json += "\"nx\":" + std::to_string(f.nx()) + ",\"ny\":" + std::to_string(f.ny()) +
                ",\"data\":\"" + base64(buf.data(), buf.size() * sizeof(float)) + "\"}";
      }
      json += "]";
    }
    clip_free(cr.ctx_v);
    if (cr.ctx_a) clip_free(cr.ctx_a);
  }
  json += "}\n";

  FILE* f = std::fopen(out_path, "wb");
  if (!f) die(std::string("cannot write ") + out_path);
  std::fwrite(json.data(), 1, json.size(), f);
  std::fclose(f);

  mtmd_input_chunks_free(chunks);
  mtmd_bitmap_free(bitmap);
  mtmd_free(ctx);
  llama_model_free(model);
  return 0;
}
