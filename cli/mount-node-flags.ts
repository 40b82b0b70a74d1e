// The node flags a mount process runs with (bin/chunkfs's first line and the mount(8) helper's
// spawn pass them; V8 takes them only at start-up: set later, --single-threaded-gc aborted the
// mount in its next collection). DESIGN §5 "Where an fsync'd 4 KiB write's CPU goes".
//
// --single-threaded-gc: the collector marks, sweeps and scavenges on the JavaScript thread alone,
// with no helper threads. The mount's heap is small and its objects short-lived; on the 2-core
// machine measured, the helpers cost more CPU than they took off the JavaScript thread: fsync'd
// 4 KiB writes (replica:3, load 17-20) took 231-349 us of the mount's CPU per write with it against
// 377-554 without (4 writers, 4 of 4 rounds; other threads 32-59 against 115-220 us) and 337-668
// against 254-630 (1 writer, median 450 against 569; 5 of 6 rounds lower). The price: peak RSS
// 9-12 MB higher (ec:4+2, 1 GiB written then 10 s of random and of fsync'd 4 KiB writes and a read:
// 277, 294 and 290 MB against 268, 282 and 281; marking on the JavaScript thread finishes later).
/** Node/V8 options of every `chunkfs` process that mounts; bin/chunkfs's first line must name the same. */
export const MOUNT_NODE_FLAGS: readonly string[] = ['--single-threaded-gc'];
