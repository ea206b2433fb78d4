// Runs llama.cpp's image resize (mtmd-image.cpp's img_tool::resize: Pillow-style bilinear,
// bicubic or Lanczos in fixed point, with or without letterboxing) on raw RGB bytes, for
// loom's resize goldens (scripts/vision-goldens.mjs builds and runs it).
//   mtmd-resize IN.rgb WIDTH HEIGHT OUT.rgb TARGET_W TARGET_H bilinear|bicubic|lanczos none|ceil|nearest [R G B]
//   mtmd-resize --dyn-size MMPROJ.gguf WIDTH HEIGHT ...   prints "W H": the size the dyn-size
//       preprocessor (Gemma 4, Qwen-VL) gives an image of each WIDTH × HEIGHT with the file's limits
#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "clip-impl.h"
#include "clip-model.h"
#include "clip.h"
#include "mtmd-image.h"

// img_tool lives in mtmd-image.cpp; libmtmd exports its resize (this declaration matches it)
struct img_tool {
  static void resize(const clip_image_u8& src, clip_image_u8& dst, const clip_image_size& target_resolution, resize_algo algo,
                     pad_style padding, std::array<uint8_t, 3> pad_color);
};

// the sizes mtmd_image_preprocessor_dyn_size picks (its preprocess on a blank image)
static int dyn_size(int argc, char** argv) {
  clip_context_params p{};
  p.use_gpu = false;
  p.flash_attn_type = CLIP_FLASH_ATTN_TYPE_AUTO;
  p.warmup = false;
  clip_init_result r = clip_init(argv[2], p);
  if (!r.ctx_v) return 1;
  mtmd_image_preprocessor_dyn_size pre(r.ctx_v);
  for (int i = 3; i + 1 < argc; i += 2) {
    const int w = std::atoi(argv[i]), h = std::atoi(argv[i + 1]);
    clip_image_u8 img;
    img.set_size({w, h}, false);
    img.cpy_buf(std::vector<uint8_t>((size_t)w * h * 3, 128));
    mtmd_image_preproc_out out = pre.preprocess(img);
    std::printf("%d %d\n", out.entries[0].nx(), out.entries[0].ny());
  }
  clip_free(r.ctx_v);
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == "--dyn-size") return dyn_size(argc, argv);
  if (argc != 9 && argc != 12) {
    std::fprintf(stderr, "usage: mtmd-resize IN.rgb WIDTH HEIGHT OUT.rgb TARGET_W TARGET_H bilinear|bicubic|lanczos none|ceil|nearest [R G B]\n");
    return 2;
  }
  const int w = std::atoi(argv[2]), h = std::atoi(argv[3]), tw = std::atoi(argv[5]), th = std::atoi(argv[6]);
  const std::string a = argv[7], p = argv[8];
  const resize_algo algo = a == "bilinear" ? RESIZE_ALGO_BILINEAR : a == "bicubic" ? RESIZE_ALGO_BICUBIC : RESIZE_ALGO_LANCZOS;
  const pad_style pad = p == "none" ? PAD_NONE : p == "ceil" ? PAD_CEIL : PAD_NEAREST;
  std::array<uint8_t, 3> color = {0, 0, 0};
  if (argc == 12) color = {(uint8_t)std::atoi(argv[9]), (uint8_t)std::atoi(argv[10]), (uint8_t)std::atoi(argv[11])};
  std::vector<uint8_t> in((size_t)w * h * 3);
  FILE* f = std::fopen(argv[1], "rb");
  if (!f || std::fread(in.data(), 1, in.size(), f) != in.size()) return 1;
  std::fclose(f);
  clip_image_u8 src, dst;
  src.set_size({w, h}, false);
  src.cpy_buf(in);
  img_tool::resize(src, dst, {tw, th}, algo, pad, color);
  const std::vector<uint8_t>& out = dst.get_ro_buf();
  f = std::fopen(argv[4], "wb");
  if (!f) return 1;
  std::fwrite(out.data(), 1, out.size(), f);
  std::fclose(f);
  return 0;
}
