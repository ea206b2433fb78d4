// What llama.cpp generates from a prompt with an image (libmtmd as llama-mtmd-cli and llama-server
// run it): the prompt's chunks (mtmd_tokenize; the image's token grid and position advance), then
// mtmd_helper_eval_chunks (image embeddings placed with the projector's positions: M-RoPE for
// Qwen), then greedy decoding with each step's logits. loom's end-to-end vision goldens come from
// it (scripts/vision-generate-goldens.mjs builds and runs it).
//
//   mtmd-generate TEXT.gguf MMPROJ.gguf IMAGE PROMPT OUT.json [-n N] [--threads N] [--flash-attn on|off|auto]
//
// PROMPT holds mtmd's marker (<__media__>) where the image goes; it is tokenized with special
// tokens parsed and BOS as the model says. --flash-attn is the encoder's (llama-mtmd-cli's default
// auto); the text model runs without flash attention and an f16 KV cache, as loom's goldens.
// OUT.json: { n_vocab, chunks: [{type:"text",tokens} | {type:"image",n_tokens,nx,ny,n_pos}],
// n_past, tokens, margins, logits: [base64 f32 of each step's logits] }.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "llama.h"
#include "mtmd-helper.h"
#include "mtmd.h"
#include "mtmd-tool.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

using mtmd_tool::base64;
using mtmd_tool::die;

int main(int argc, char** argv) {
  mtmd_tool::tool_name = "mtmd-generate";
  if (argc < 6) die("usage: mtmd-generate TEXT.gguf MMPROJ.gguf IMAGE PROMPT OUT.json [-n N] [--threads N] [--flash-attn on|off|auto]");
  const char* out_path = argv[5];
  int n_predict = 8, threads = 2;
  llama_flash_attn_type fa = LLAMA_FLASH_ATTN_TYPE_AUTO;
  for (int i = 6; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "-n" && i + 1 < argc) n_predict = std::atoi(argv[++i]);
    else if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--flash-attn" && i + 1 < argc) {
      const std::string v = argv[++i];
      fa = v == "on" ? LLAMA_FLASH_ATTN_TYPE_ENABLED : v == "off" ? LLAMA_FLASH_ATTN_TYPE_DISABLED : LLAMA_FLASH_ATTN_TYPE_AUTO;
    } else die("unknown argument " + a);
  }

  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) die(std::string("cannot load the text model ") + argv[1]);
  llama_context_params lp = llama_context_default_params();
  lp.n_ctx = 512;
  lp.n_batch = 512;
  lp.n_ubatch = 512;
  lp.n_threads = lp.n_threads_batch = threads;
  lp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  llama_context* lctx = llama_init_from_model(model, lp);
  if (!lctx) die("cannot create the text context");

  mtmd_context_params cp = mtmd_context_params_default();
  cp.use_gpu = false;
  cp.n_threads = threads;
  cp.flash_attn_type = fa;
  cp.warmup = false;
  cp.print_timings = false;
  mtmd_context* ctx = mtmd_init_from_file(argv[2], model, cp);
  if (!ctx) die(std::string("cannot load the projector ") + argv[2]);
  mtmd_bitmap* bitmap = mtmd_helper_bitmap_init_from_file(ctx, argv[3], false, mtmd_helper_init_opt_default()).bitmap;
  if (!bitmap) die(std::string("cannot read the image ") + argv[3]);

  mtmd_input_chunks* chunks = mtmd_input_chunks_init();
  const std::string prompt = argv[4];
  const mtmd_input_text text{prompt.c_str(), prompt.size(), true, true};
  const mtmd_bitmap* bitmaps[] = {bitmap};
  if (mtmd_tokenize(ctx, chunks, &text, bitmaps, 1) != 0) die("mtmd_tokenize failed");

  std::string json = "{\"n_vocab\":" + std::to_string(llama_vocab_n_tokens(llama_model_get_vocab(model))) + ",\"chunks\":[";
  for (size_t i = 0; i < mtmd_input_chunks_size(chunks); i++) {
    const mtmd_input_chunk* chunk = mtmd_input_chunks_get(chunks, i);
    json += i ? "," : "";
    if (mtmd_input_chunk_get_type(chunk) == MTMD_INPUT_CHUNK_TYPE_TEXT) {
      size_t n = 0;
      const llama_token* tokens = mtmd_input_chunk_get_tokens_text(chunk, &n);
      json += "{\"type\":\"text\",\"tokens\":[";
      for (size_t t = 0; t < n; t++) json += (t ? "," : "") + std::to_string(tokens[t]);
      json += "]}";
    } else {
      const mtmd_image_tokens* image = mtmd_input_chunk_get_tokens_image(chunk);
      json += "{\"type\":\"image\",\"n_tokens\":" + std::to_string(mtmd_input_chunk_get_n_tokens(chunk)) +
              ",\"nx\":" + std::to_string(mtmd_image_tokens_get_nx(image)) + ",\"ny\":" + std::to_string(mtmd_image_tokens_get_ny(image)) +
              ",\"n_pos\":" + std::to_string(mtmd_input_chunk_get_n_pos(chunk)) + "}";
    }
  }
  llama_pos n_past = 0;
  if (mtmd_helper_eval_chunks(ctx, lctx, chunks, 0, 0, 512, true, &n_past) != 0) die("mtmd_helper_eval_chunks failed");
  json += "],\"n_past\":" + std::to_string(n_past);

  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  std::string tokens = "[", margins = "[", logits = "[";
  llama_batch batch = llama_batch_init(1, 0, 1);
  for (int step = 0; step < n_predict; step++) {
    const float* row = llama_get_logits_ith(lctx, -1);
    std::vector<int> order(n_vocab);
    for (int i = 0; i < n_vocab; i++) order[i] = i;
    std::partial_sort(order.begin(), order.begin() + 2, order.end(), [&](int a, int b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    const int next = order[0];
    tokens += (step ? "," : "") + std::to_string(next);
    margins += (step ? "," : "") + std::to_string(row[order[0]] - row[order[1]]);
    logits += std::string(step ? "," : "") + "\"" + base64(row, n_vocab * sizeof(float)) + "\"";
    batch.n_tokens = 1;
    batch.token[0] = next;
    batch.pos[0] = n_past++;
    batch.n_seq_id[0] = 1;
    batch.seq_id[0][0] = 0;
    batch.logits[0] = true;
    if (llama_decode(lctx, batch) != 0) die("llama_decode failed");
  }
  json += ",\"tokens\":" + tokens + "],\"margins\":" + margins + "],\"logits\":" + logits + "]}\n";

  FILE* f = std::fopen(out_path, "wb");
  if (!f) die(std::string("cannot write ") + out_path);
  std::fwrite(json.data(), 1, json.size(), f);
  std::fclose(f);
  llama_batch_free(batch);
  mtmd_input_chunks_free(chunks);
  mtmd_bitmap_free(bitmap);
  mtmd_free(ctx);
  llama_free(lctx);
  llama_model_free(model);
  return 0;
}
