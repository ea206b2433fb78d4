// Asks llama.cpp's mtmd what size it resizes images of given sizes to for a Qwen-VL projector
// (mtmd_image_preprocessor_dyn_size, the class mtmd.cpp picks for QWEN2VL / QWEN25VL / QWEN3VL),
// and the token grid clip computes for the result. loom's resize goldens come from it
// (scripts/qwen-resize-goldens.mjs builds and runs it).
//
//   qwen-resize-sizes MMPROJ.gguf W1xH1 [W2xH2 ...]
//
// stdout: a JSON array of { in: [w, h], out: [w, h], grid: [nx, ny], tokens } (the image's pixels
// are black: the size does not depend on them).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "clip-impl.h"
#include "clip.h"
#include "mtmd-image.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: qwen-resize-sizes MMPROJ.gguf WxH...\n");
    return 1;
  }
  clip_context_params clp{};
  clp.use_gpu = false;
  clp.flash_attn_type = CLIP_FLASH_ATTN_TYPE_AUTO;
  clp.warmup = false;
  clip_init_result cr = clip_init(argv[1], clp);
  if (!cr.ctx_v) {
    std::fprintf(stderr, "clip_init found no vision encoder in %s\n", argv[1]);
    return 1;
  }
  mtmd_image_preprocessor_dyn_size pre(cr.ctx_v);
  std::string json = "[";
  for (int i = 2; i < argc; i++) {
    int w = 0, h = 0;
    if (std::sscanf(argv[i], "%dx%d", &w, &h) != 2 || w <= 0 || h <= 0) {
      std::fprintf(stderr, "bad size %s\n", argv[i]);
      return 1;
    }
    clip_image_u8 img;
    img.set_size({w, h}, false);
    img.cpy_buf(std::vector<uint8_t>(static_cast<size_t>(w) * h * 3, 0));
    mtmd_image_preproc_out out = pre.preprocess(img);
    const clip_image_f32& f = out.entries.at(0);
    const int nx = clip_n_output_tokens_x(cr.ctx_v, &f), ny = clip_n_output_tokens_y(cr.ctx_v, &f);
    json += (i > 2 ? "," : "");
    json += "{\"in\":[" + std::to_string(w) + "," + std::to_string(h) + "],\"out\":[" + std::to_string(f.nx()) + "," +
            std::to_string(f.ny()) + "],\"grid\":[" + std::to_string(nx) + "," + std::to_string(ny) +
            "],\"tokens\":" + std::to_string(clip_n_output_tokens(cr.ctx_v, &f)) + "}";
  }
  json += "]\n";
  std::fputs(json.c_str(), stdout);
  clip_free(cr.ctx_v);
  if (cr.ctx_a) clip_free(cr.ctx_a);
  return 0;
}
