// perf bench breakpoint enable's run, with where its passive threads landed, three ways:
//   fresh-thread PASSIVE TOGGLES MODE   (gcc -O2 -o fresh-thread fresh-thread.c -lpthread)
//   MODE 0: on the main thread of a fresh process, as perf bench runs it;
//        1: on the main thread after a 10,000-toggle run of the same (as a benchmark thread
//           after Google Benchmark's earlier calls);
//        2: after that run, on a new thread.
// Prints remote=<threads that last ran on another CPU than the toggler's> usecs/op=<...>.
#define _GNU_SOURCE
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>
#include <dirent.h>
static int done; static int np, loops;
static void *passive(void *arg) {
  while (!__atomic_load_n(&done, __ATOMIC_RELAXED)) syscall(SYS_futex, &done, FUTEX_WAIT, 0, NULL, NULL, 0);
  return NULL;
}
static int lastcpu(int tid) {
  char p[64], buf[1024]; snprintf(p, sizeof p, "/proc/self/task/%d/stat", tid);
  FILE *f = fopen(p, "r"); if (!f) return -1; size_t n = fread(buf,1,sizeof buf-1,f); fclose(f); buf[n]=0;
  char *s = strrchr(buf, ')') + 2; int field = 3; int cpu=-1;
  for (char *t = strtok(s, " "); t; t = strtok(NULL, " "), field++) if (field == 39) { cpu = atoi(t); break; }
  return cpu;
}
static double run_once(int print) {
  volatile char watched;
  struct perf_event_attr attr = {0};
  attr.type = PERF_TYPE_BREAKPOINT; attr.size = sizeof attr; attr.inherit = 1; attr.exclude_kernel = 1; attr.exclude_hv = 1;
  attr.bp_addr = (unsigned long)&watched; attr.bp_type = HW_BREAKPOINT_RW; attr.bp_len = HW_BREAKPOINT_LEN_1;
  int fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
  pthread_t th[64];
  __atomic_store_n(&done, 0, __ATOMIC_RELAXED);
  for (int i = 0; i < np; i++) pthread_create(&th[i], NULL, passive, NULL);
  usleep(10000);
  int me = sched_getcpu(), remote = 0, self = syscall(SYS_gettid);
  DIR *d = opendir("/proc/self/task"); struct dirent *e;
  while ((e = readdir(d))) { int t = atoi(e->d_name); if (t > 0 && t != self && t != getpid() && lastcpu(t) != me) remote++; }
  closedir(d);
  struct timeval a, b; gettimeofday(&a, NULL);
  for (int i = 0; i < loops; i++) { ioctl(fd, PERF_EVENT_IOC_DISABLE, 0); ioctl(fd, PERF_EVENT_IOC_ENABLE, 0); }
  gettimeofday(&b, NULL);
  double us = ((b.tv_sec - a.tv_sec) * 1e6 + (b.tv_usec - a.tv_usec)) / loops;
  if (print) printf("remote=%d usecs/op=%.1f\n", remote, us);
  __atomic_store_n(&done, 1, __ATOMIC_RELAXED); syscall(SYS_futex, &done, FUTEX_WAKE, 1<<30, NULL, NULL, 0);
  for (int i = 0; i < np; i++) pthread_join(th[i], NULL);
  close(fd);
  return us;
}
static void *fresh(void *arg) { run_once(1); return NULL; }
int main(int argc, char **argv) {
  np = atoi(argv[1]); loops = atoi(argv[2]); int mode = atoi(argv[3]);
  // mode 0: like a fresh process; 1: a long run first on this thread, then measure here;
  // 2: a long run first, then measure on a fresh thread
  if (mode >= 1) { int l = loops; loops = 10000; run_once(0); loops = l; }
  if (mode == 2) { pthread_t t; pthread_create(&t, NULL, fresh, NULL); pthread_join(t, NULL); }
  else run_once(1);
  return 0;
}
