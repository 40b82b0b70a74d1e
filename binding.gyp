{
  "targets": [
    {
      "target_name": "chunkfs_rs",
      "sources": [
        "native/rs/binding.cc",
        "native/rs/gf_kernels.cc",
        "native/rs/gf_tables.cc",
        "native/rs/gf_x86.cc",
        "native/highway/binding_highway.cc",
        "native/highway/highwayhash.cc",
        "native/highway/highwayhash_avx2.cc",
        "native/highway/highwayhash_scalar.cc",
        "native/memory/huge_alloc.cc"
      ],
      "cflags_cc": ["-O3", "-std=c++17", "-Wall", "-Wextra", "-Wno-maybe-uninitialized"],
      "cflags_cc!": ["-fno-exceptions"],
      "defines": ["NAPI_VERSION=8"]
    }
  ]
}
