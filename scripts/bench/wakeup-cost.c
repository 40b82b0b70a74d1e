// What a wake-up costs on this machine (DESIGN §6: a FUSE request is a round trip between client and
// server). Two processes pass one byte back and forth through two pipes, ROUNDS times, each pinned to
// the CPU given; prints the mean round trip. Same CPU: two context switches. Different CPUs: two
// cross-CPU wake-ups (an inter-processor interrupt each, costly in a VM).
// Build and run: gcc -O2 scripts/bench/wakeup-cost.c -o /tmp/wakeup-cost && /tmp/wakeup-cost 0 1 && /tmp/wakeup-cost 0 0
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { ROUNDS = 50000 };

static void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    perror("wakeup-cost: sched_setaffinity");
    exit(1);
  }
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: wakeup-cost CPU_A CPU_B\n");
    return 2;
  }
  int toChild[2], toParent[2];
  if (pipe(toChild) != 0 || pipe(toParent) != 0) {
    perror("wakeup-cost: pipe");
    return 1;
  }
  char c = 0;
  pid_t child = fork();
  if (child == 0) {
    pin(atoi(argv[2]));
    for (int i = 0; i < ROUNDS; i++) {
      if (read(toChild[0], &c, 1) != 1 || write(toParent[1], &c, 1) != 1) _exit(1);
    }
    _exit(0);
  }
  pin(atoi(argv[1]));
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < ROUNDS; i++) {
    if (write(toChild[1], &c, 1) != 1 || read(toParent[0], &c, 1) != 1) {
      perror("wakeup-cost: round trip");
      return 1;
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  waitpid(child, NULL, 0);
  double us = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / ROUNDS / 1000;
  printf("CPUs %s and %s: %.1f us per round trip\n", argv[1], argv[2], us);
  return 0;
}
