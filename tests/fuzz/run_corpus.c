/*
 * run_corpus.c: runs a libFuzzer target over files (its seed corpus), for
 * builds without libFuzzer: each file is one input; a target that aborts
 * fails the run.  usage: run_corpus FILE...
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  int i, n = 0;
  for (i = 1; i < argc; i++) {
    FILE *f = fopen(argv[i], "rb");
    unsigned char *buf;
    long len;
    if (!f) {
      fprintf(stderr, "%s: cannot open\n", argv[i]);
      return 1;
    }
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    rewind(f);
    buf = malloc(len > 0 ? (size_t)len : 1);
    if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
      fprintf(stderr, "%s: cannot read\n", argv[i]);
      return 1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t)len);
    free(buf);
    n++;
  }
  printf("%d inputs\n", n);
  return n ? 0 : 1;
}
