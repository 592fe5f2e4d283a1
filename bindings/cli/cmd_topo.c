/* cmd_topo.c: gpuplan topo: the library's topo command (a catalog node's
 * GPU/NIC matrix as `nvidia-smi topo -m` prints it, and where each parallel
 * group of a layout runs), rendered from its document. */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "cli.h"

static const char topo_about[] =
    "Print a node's GPU and NIC connection matrix the way `nvidia-smi topo -m`\n"
    "does (NV# = NVLink links, PIX = one PCIe switch, PXB = several switches,\n"
    "NODE = across host bridges of one CPU, SYS = across CPUs), and with\n"
    "--layout, place the ranks (Megatron order: tp fastest, then cp, dp, pp)\n"
    "on nodes and GPUs and say which fabric each group crosses.\n";

static int render_topo(cli *c, gpuplan_doc *doc) {
  const gpuplan_value *r = gpuplan_doc_root(doc), *m = dv(r, "matrix"), *lay = dv(r, "layout");
  size_t i, j, n = gpuplan_value_count(m);
  long long per = (long long)dint(r, "per_node"), nics = (long long)dint(r, "nics");
  char name[256];
  (void)c;
  if (dv(r, "driver") && !dbool(r, "driver.available")) {
    /* as nvidia-smi topo -m without a driver (exit 9, as gpuplan smi) */
    fprintf(stderr, "%s\n", dstr(r, "driver.error"));
    return 9;
  }
  printf("%s x %lld per node (%s)\n\n", term_safe(dstr(r, "gpu_name"), name, sizeof name), per,
         dbool(r, "nvlink") ? dstr(r, "intra.fabric") : "PCIe only");
  printf("       ");
  for (j = 0; j < n; j++) printf(" GPU%-3zu", j);
  for (j = 0; j < (size_t)nics; j++) printf(" NIC%-3zu", j);
  printf(" CPU Affinity\n");
  for (i = 0; i < n; i++) {
    const gpuplan_value *row = gpuplan_value_at(m, i), *g = dv(row, "gpus"), *x = dv(row, "nics");
    printf("GPU%-3zu ", i);
    for (j = 0; j < gpuplan_value_count(g); j++) printf(" %-6s", gpuplan_value_string(gpuplan_value_at(g, j), NULL));
    for (j = 0; j < gpuplan_value_count(x); j++) printf(" %-6s", gpuplan_value_string(gpuplan_value_at(x, j), NULL));
    printf(" socket %lld\n", (long long)dint(row, "socket"));
  }
  printf("\nLegend: X = self; NV# = # NVLinks; PIX = one PCIe switch; PXB = several PCIe switches;\n"
         "NODE = across host bridges of one CPU; SYS = across CPUs (UPI/Infinity Fabric).\n");
  printf("Between nodes: %s, %.0f GB/s per node each way.\n", dstr(r, "inter.fabric"), dnum(r, "inter.bw_bytes_s") / 1e9);
  if (gpuplan_value_type_of(lay) == GPUPLAN_VALUE_OBJECT) {
    const gpuplan_value *gr = dv(lay, "groups"), *w = dv(lay, "warnings"), *ranks = dv(lay, "ranks");
    long long world = (long long)dint(r, "gpus");
    size_t k, nw = gpuplan_value_count(w);
    printf("\nplacement of %lld ranks (tp %lld, cp %lld, dp %lld, pp %lld; tp fastest):\n", world,
           (long long)dint(lay, "tp"), (long long)dint(lay, "cp"), (long long)dint(lay, "dp"), (long long)dint(lay, "pp"));
    for (k = 0; k < gpuplan_value_count(gr); k++) {
      const gpuplan_value *g = gpuplan_value_at(gr, k);
      long long nodes_in = (long long)dint(g, "nodes");
      printf("  %-17s groups of %-4lld: %s", dstr(g, "name"), (long long)dint(g, "size"),
             nodes_in == 1 ? "inside one node over " : "across ");
      if (nodes_in == 1) printf("%s\n", dstr(g, "fabric"));
      else printf("%lld nodes over %s\n", nodes_in, dstr(g, "fabric"));
      if (!strcmp(dstr(g, "name"), "tensor parallel"))
        for (j = 0; j < nw; j++) printf("    WARNING: %s\n", gpuplan_value_string(gpuplan_value_at(w, j), NULL));
    }
    printf("  rank -> (node, GPU):");
    for (k = 0; k < gpuplan_value_count(ranks); k++) {
      const gpuplan_value *x = gpuplan_value_at(ranks, k);
      printf("%s %lld->(%lld,%lld)", k % 8 ? "" : "\n   ", (long long)dint(x, "rank"), (long long)dint(x, "node"),
             (long long)dint(x, "gpu"));
    }
    if (world > 32) printf("\n    ... %lld more", world - 32);
    printf("\n%s\n", nw ? "" : "  no warnings: tensor parallelism stays on NVLink inside a node");
  }
  return EXIT_OK;
}

int cmd_topo(cli *c, int argc, char **argv) {
  return cli_run(c, gpuplan_command_find("topo"), argc, argv,
                 "usage: gpuplan topo [--node VM | --gpu SKU [--per-node G]] [--nodes K]\n"
                 "                    [--layout TP,PP,DP[,CP]] [--pcie-only] [--json | --csv]",
                 topo_about, render_topo, NULL, NULL);
}
