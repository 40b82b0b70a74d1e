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
        "native/memory/huge_alloc.cc",
        "native/fsys/syncfs.cc",
        "native/cipher/aes_gcm.cc",
        "native/cipher/gcm_segments.cc"
      ],
      "cflags_cc": ["-O3", "-std=c++17", "-Wall", "-Wextra", "-Wno-maybe-uninitialized"],
      "cflags_cc!": ["-fno-exceptions"],
      "defines": ["NAPI_VERSION=8"]
    },
    {
      "target_name": "chunkfs_fuse3",
      "sources": [
        "native/fuse3/attr_binding.cc",
        "native/fuse3/attr_table.cc",
        "native/fuse3/binding.cc",
        "native/fuse3/clean_close_binding.cc",
        "native/fuse3/clean_closes.cc",
        "native/fuse3/entry_binding.cc",
        "native/fuse3/entry_table.cc",
        "native/fuse3/fusermount_socket.cc",
        "native/fuse3/grant_binding.cc",
        "native/fuse3/kill_priv.cc",
        "native/fuse3/lowlevel_ops.cc",
        "native/fuse3/read_grant.cc",
        "native/fuse3/replies.cc",
        "native/fuse3/session.cc",
        "native/fuse3/to_js.cc",
        "native/fuse3/write_pool.cc",
        "native/cipher/gcm_segments.cc",
        "native/highway/highwayhash.cc",
        "native/highway/highwayhash_avx2.cc",
        "native/highway/highwayhash_scalar.cc"
      ],
      "include_dirs": ["<!@(pkg-config --cflags-only-I fuse3 | sed s/-I//g)"],
      "libraries": ["<!@(pkg-config --libs fuse3)"],
      "cflags_cc": ["-O2", "-std=c++17", "-Wall", "-Wextra", "-pthread"],
      "cflags_cc!": ["-fno-exceptions"],
      "defines": ["NAPI_VERSION=8"]
    },
    {
      "target_name": "chunkfs_unmount_guard",
      "type": "executable",
      "sources": ["native/fuse3/unmount_guard.cc"],
      "cflags_cc": ["-O2", "-std=c++17", "-Wall", "-Wextra"]
    }
  ]
}
