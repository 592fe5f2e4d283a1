/* cmd_topo.c: gpuplan topo: the node's GPU/NIC matrix as `nvidia-smi topo -m`
 * prints it, and where each parallel group of a layout runs. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char topo_usage[] =
    "usage: gpuplan topo (--node VM | --gpu SKU [--per-node G]) [--nodes K]\n"
    "                    [--layout TP,PP,DP[,CP]] [--pcie-only]\n"
    "\n"
    "Print a node's GPU and NIC connection matrix the way `nvidia-smi topo -m`\n"
    "does (NV# = NVLink links, PIX = one PCIe switch, PXB = several switches,\n"
    "NODE = across host bridges of one CPU, SYS = across CPUs), and with\n"
    "--layout, place the ranks (Megatron order: tp fastest, then cp, dp, pp)\n"
    "on nodes and GPUs and say which fabric each group crosses.\n"
    "\n"
    "  --pcie-only  pretend NVLink is absent (the 'NVLink not detected' case)\n";

static const char *pcie_rel(int i, int j, int per) {
  if (i / 2 == j / 2) return "PIX";
  if (per > 4 && i / (per / 2) != j / (per / 2)) return "SYS";
  return "PXB";
}

static int nv_links(double gen) {
  if (gen >= 4) return 18;
  if (gen >= 3) return 12;
  if (gen >= 2) return 6;
  return 4;
}

int cmd_topo(cli *c, int argc, char **argv) {
  const char *node_name = NULL, *gpu_name = NULL, *layout = NULL;
  int64_t nodes = 1, per = 8, tp = 1, pp = 1, dp = 1, cp = 1;
  int i, j, rc, pcie_only = 0, nics;
  const gpuplan_gpu *g = NULL;
  const gpuplan_node *n = NULL;
  gpuplan_cluster cl;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (cli_is_help(a)) {
      fputs(topo_usage, stdout);
      return EXIT_OK;
    } else if (strcmp(a, "--pcie-only") == 0) {
      pcie_only = 1;
    } else if ((strcmp(a, "--node") == 0 || strcmp(a, "--gpu") == 0 || strcmp(a, "--nodes") == 0 ||
                strcmp(a, "--per-node") == 0 || strcmp(a, "--layout") == 0) && i + 1 < argc) {
      const char *v = argv[++i];
      if (strcmp(a, "--node") == 0) node_name = v;
      else if (strcmp(a, "--gpu") == 0) gpu_name = v;
      else if (strcmp(a, "--layout") == 0) layout = v;
      else {
        char *e;
        long x = strtol(v, &e, 10);
        if (*e || x < 1 || x > 100000) return cli_fail(c, EXIT_USAGE, "topo: %s '%s' is not a count", a, v);
        if (strcmp(a, "--nodes") == 0) nodes = x;
        else per = x;
      }
    } else {
      return cli_fail(c, EXIT_USAGE, "topo: unexpected argument '%s' (see gpuplan topo --help)", a);
    }
  }
  if (!node_name == !gpu_name) return cli_fail(c, EXIT_USAGE, "topo: give --node VM or --gpu SKU");
  if ((rc = cli_catalog(c))) return rc;
  if (node_name) {
    if ((rc = gpuplan_catalog_node(c->cat, node_name, &n))) return cli_lib_fail(c, rc);
    if ((rc = gpuplan_cluster_from_node(c->ctx, c->cat, n, nodes, &cl))) return cli_lib_fail(c, rc);
    g = cl.gpu;
    per = cl.gpus_per_node;
    nics = n && isfinite(n->nic_count) ? (int)n->nic_count : 1;
  } else {
    if ((rc = gpuplan_catalog_gpu(c->cat, gpu_name, &g))) return cli_lib_fail(c, rc);
    if ((rc = gpuplan_cluster_default(c->ctx, c->cat, g, per * nodes, per, &cl))) return cli_lib_fail(c, rc);
    nics = (int)per;
  }
  if (!g) return cli_fail(c, EXIT_RUNTIME, "topo: %s has no GPU", n ? n->name : "node");
  if (pcie_only) cl.intra_name = "pcie", cl.intra_bw_bytes_s = isfinite(g->pcie_gen) && g->pcie_gen >= 5 ? 63e9 : 31.5e9;
  {
    int nv = !pcie_only && strcmp(cl.intra_name, "pcie") != 0 && per > 1;
    int links = nv ? nv_links(g->nvlink_gen) : 0;
    if (nics > 16) nics = 16;
    printf("%s x %lld per node (%s)\n\n", g->name, (long long)per, nv ? cl.intra_name : "PCIe only");
    printf("       ");
    for (j = 0; j < per; j++) printf(" GPU%-3d", j);
    for (j = 0; j < nics; j++) printf(" NIC%-3d", j);
    printf(" CPU Affinity\n");
    for (i = 0; i < per; i++) {
      printf("GPU%-3d ", i);
      for (j = 0; j < per; j++) {
        char cell[8];
        if (i == j) snprintf(cell, sizeof cell, "X");
        else if (nv) snprintf(cell, sizeof cell, "NV%d", links);
        else snprintf(cell, sizeof cell, "%s", pcie_rel(i, j, (int)per));
        printf(" %-6s", cell);
      }
      for (j = 0; j < nics; j++) printf(" %-6s", pcie_rel(i, j * (int)per / (nics ? nics : 1), (int)per));
      printf(" %s\n", per > 4 && i >= per / 2 ? "socket 1" : "socket 0");
    }
    printf("\nLegend: X = self; NV# = # NVLinks; PIX = one PCIe switch; PXB = several PCIe switches;\n"
           "NODE = across host bridges of one CPU; SYS = across CPUs (UPI/Infinity Fabric).\n");
    printf("Between nodes: %s, %.0f GB/s per node each way.\n", cl.inter_name, cl.inter_bw_bytes_s / 1e9);
    if (layout) {
      int64_t world = per * nodes, r, warn = 0;
      struct { const char *name; int64_t size, stride; } grp[4];
      int k;
      if (sscanf(layout, "%lld,%lld,%lld,%lld", (long long *)&tp, (long long *)&pp, (long long *)&dp,
                 (long long *)&cp) < 3)
        return cli_fail(c, EXIT_USAGE, "topo: --layout needs TP,PP,DP[,CP]");
      if (tp * pp * dp * cp != world)
        return cli_fail(c, EXIT_RUNTIME, "topo: tp*pp*dp*cp = %lld, but the cluster has %lld GPUs",
                        (long long)(tp * pp * dp * cp), (long long)world);
      grp[0].name = "tensor parallel"; grp[0].size = tp; grp[0].stride = 1;
      grp[1].name = "context parallel"; grp[1].size = cp; grp[1].stride = tp;
      grp[2].name = "data parallel"; grp[2].size = dp; grp[2].stride = tp * cp;
      grp[3].name = "pipeline"; grp[3].size = pp; grp[3].stride = tp * cp * dp;
      printf("\nplacement of %lld ranks (tp %lld, cp %lld, dp %lld, pp %lld; tp fastest):\n", (long long)world,
             (long long)tp, (long long)cp, (long long)dp, (long long)pp);
      for (k = 0; k < 4; k++) {
        int64_t span = grp[k].size * grp[k].stride, nodes_in;
        if (grp[k].size <= 1) continue;
        nodes_in = span <= per ? 1 : (grp[k].stride >= per ? grp[k].size : (span + per - 1) / per);
        printf("  %-17s groups of %-4lld: %s", grp[k].name, (long long)grp[k].size,
               nodes_in == 1 ? "inside one node over " : "across ");
        if (nodes_in == 1) printf("%s\n", nv ? cl.intra_name : "PCIe");
        else printf("%lld nodes over %s\n", (long long)nodes_in, cl.inter_name);
        if (k == 0 && nodes_in > 1) {
          printf("    WARNING: tensor parallelism spans nodes: every layer waits on %s\n", cl.inter_name);
          warn++;
        }
        if (k == 0 && !nv) {
          printf("    WARNING: tensor parallelism runs over PCIe only (%.0f GB/s instead of NVLink)\n",
                 cl.intra_bw_bytes_s / 1e9);
          warn++;
        }
      }
      printf("  rank -> (node, GPU):");
      for (r = 0; r < world && r < 32; r++)
        printf("%s %lld->(%lld,%lld)", r % 8 ? "" : "\n   ", (long long)r, (long long)(r / per),
               (long long)(r % per));
      if (world > 32) printf("\n    ... %lld more", (long long)(world - 32));
      printf("\n%s\n", warn ? "" : "  no warnings: tensor parallelism stays on NVLink inside a node");
    }
  }
  return EXIT_OK;
}
