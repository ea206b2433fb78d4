# The loom_native addon (node-addon-api, C++17, exceptions on). One build runs on any
# x86-64: code that needs AVX2+FMA+F16C or AVX-512 lives in native/x86/*_avx2.cc and
# native/x86/avx2/, native/x86/*_avx512.cc and native/x86/avx512/, compiled in their own
# static libraries with their own -m flags and called only when the CPU has those features
# (native/cpu.cc); everything else is portable C++ (never -march=native) and also builds on
# arm64, where the x86 libraries are left out. Every source is listed.
{
  'targets': [
    {
      'target_name': 'loom_native',
      'dependencies': ['<!(node -p "require(\'node-addon-api\').targets"):node_addon_api_except'],
      'sources': [
        'native/binding.cc',
        'native/napi-kernels.cc',
        'native/napi-attention.cc',
        'native/napi-recurrent.cc',
        'native/cpu.cc',
        'native/threadpool.cc',
        'native/simd.cc',
        'native/norm.cc',
        'native/rope.cc',
        'native/act.cc',
        'native/attention.cc',
        'native/recurrent.cc',
        'native/probe.cc',
        'native/huge-pages.cc',
        'native/mapped-file.cc',
        'native/napi-mapping.cc',
        'native/matmul.cc',
        'native/matmul-batch.cc',
        'native/moe.cc',
        'native/napi-moe.cc',
        'native/quant.cc',
        'native/weight-types.cc',
        'native/r16.cc',
        'native/portable/dot.cc',
      ],
      'cflags': ['-O3'],
      'conditions': [
        ['target_arch=="x64"', { 'dependencies': ['loom_x86_avx2', 'loom_x86_avx512'] }],
      ],
    },
  ],
  'conditions': [
    ['target_arch=="x64"', {
      'targets': [
        {
          'target_name': 'loom_x86_avx2',
          'type': 'static_library',
          'sources': [
            'native/x86/simd_avx2.cc',
            'native/x86/probe_avx2.cc',
            'native/x86/recurrent_avx2.cc',
            'native/x86/avx2/prepare.cc',
            'native/x86/avx2/dot_float.cc',
            'native/x86/avx2/dot_int8.cc',
            'native/x86/avx2/dot_mxfp4.cc',
            'native/x86/avx2/dot_r16.cc',
            'native/x86/avx2/gemm.cc',
          ],
          'cflags': ['-O3', '-fPIC', '-mavx2', '-mfma', '-mf16c'],
        },
        {
          'target_name': 'loom_x86_avx512',
          'type': 'static_library',
          'sources': [
            'native/x86/simd_avx512.cc',
            'native/x86/probe_avx512.cc',
            'native/x86/recurrent_avx512.cc',
            'native/x86/avx512/dot_float.cc',
            'native/x86/avx512/dot_q_0.cc',
            'native/x86/avx512/dot_q45_k.cc',
            'native/x86/avx512/dot_q6_k.cc',
            'native/x86/avx512/dot_iq4_xs.cc',
            'native/x86/avx512/dot_mxfp4.cc',
            'native/x86/avx512/dot_r16.cc',
            'native/x86/avx512/prepare.cc',
            'native/x86/avx512/gemm_pack.cc',
            'native/x86/avx512/gemm.cc',
          ],
          'cflags': [
            '-O3', '-fPIC', '-mavx512f', '-mavx512bw', '-mavx512vl', '-mavx512dq', '-mavx512vnni', '-mavx512bf16', '-mbmi2',
            '-mavx2', '-mfma', '-mf16c',
            # GCC 12's AVX-512 headers trip these on their own `__Y = __Y` idiom
            '-Wno-uninitialized', '-Wno-maybe-uninitialized',
          ],
        },
      ],
    }],
  ],
}
