/*
 * cmd_smi.c: gpuplan smi and gpuplan doctor: the library's smi and doctor
 * commands (gpuplan_job_run), rendered as nvidia-smi and doctor print
 * them.  nvidia-smi's own argument forms (-q -d, -L, -i, -l, -x,
 * topo -m, dmon, pmon, nvlink -s/-c) map onto the job's options here;
 * everything shown comes from the document.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

#define MiB 1048576.0

enum { V_TABLE = 0, V_QUERY, V_LIST, V_XML, V_TOPO, V_DMON, V_PMON, V_NVLINK_S, V_NVLINK_C, V_ROWS };

typedef struct smi_args {
  int view;            /* V_* */
  int sub;             /* the subcommand being parsed: 0, V_TOPO, V_DMON, V_PMON, V_NVLINK_S */
  char display[160];   /* -q -d */
  char select[32];     /* dmon/pmon -s */
  double loop_s;       /* -l / -lms: repeat every loop_s seconds */
  int format_given;    /* --format */
  int query;           /* --query-gpu / --query-compute-apps */
  int xml;
} smi_args;

/* --- small readers ------------------------------------------------------------- */

static const gpuplan_value *at(const gpuplan_value *a, size_t i) { return gpuplan_value_at(a, i); }
static size_t count(const gpuplan_value *a) { return gpuplan_value_count(a); }

/* An integer field as text, or na when null. */
static const char *ifmt(char *buf, size_t cap, const gpuplan_value *v, const char *path, const char *fmt,
                        const char *na) {
  if (disnull(v, path)) snprintf(buf, cap, "%s", na);
  else snprintf(buf, cap, fmt, (long long)llround(dnum(v, path)));
  return buf;
}

static int driver_major(const gpuplan_value *r) { return atoi(dstr(r, "driver.version")); }

/* --- the table --------------------------------------------------------------------- */

/* Three layouts, as the driver's nvidia-smi draws them: before 530 (79
 * columns), 530-544 (the 535 branch's, 89), 545 and later (91). */
typedef struct layout {
  int left, mid, right, name_w, proc_name_w;
} layout;

static layout layout_of(int major) {
  layout l;
  if (major && major < 530) l = (layout){31, 22, 22, 18, 30};
  else if (major && major < 545) l = (layout){41, 22, 22, 29, 40};
  else l = (layout){41, 24, 22, 29, 42};
  return l;
}

static void rule(const layout *l, char c, char first, char last) {
  int i;
  putchar(first);
  for (i = 0; i < l->left; i++) putchar(c);
  putchar('+');
  for (i = 0; i < l->mid; i++) putchar(c);
  putchar('+');
  for (i = 0; i < l->right; i++) putchar(c);
  putchar(last);
  putchar('\n');
}

static void full(const layout *l, char c) {
  int i, w = l->left + l->mid + l->right + 2;
  putchar(c == '=' ? '|' : '+');
  for (i = 0; i < w; i++) putchar(c);
  puts(c == '=' ? "|" : "+");
}

static void boxed(const layout *l, const char *s) {
  int w = l->left + l->mid + l->right + 2;
  printf("|%-*.*s|\n", w, w, s);
}

static void render_table(const gpuplan_value *r) {
  const gpuplan_value *gpus = dv(r, "gpus");
  int major = driver_major(r);
  layout l = layout_of(major);
  char line[256], name[160], cell[64], a[32], b[32];
  size_t i, k, any = 0;
  int classic = major && major < 530, w = l.left + l.mid + l.right + 2;
  printf("%s       \n", dstr(r, "timestamp_text"));
  full(&l, '-');
  if (classic)
    snprintf(line, sizeof line, " NVIDIA-SMI %-13sDriver Version: %-13sCUDA Version: %-9s", dstr(r, "driver.version"),
             dstr(r, "driver.version"), dstr(r, "driver.cuda_version"));
  else
    snprintf(line, sizeof line, " NVIDIA-SMI %-23sDriver Version: %-*sCUDA Version: %-9s",
             disnull(r, "driver.version") ? "N/A" : dstr(r, "driver.version"), l.mid == 24 ? 15 : 13,
             disnull(r, "driver.version") ? "N/A" : dstr(r, "driver.version"), dstr(r, "driver.cuda_version"));
  boxed(&l, line);
  rule(&l, '-', '|', '+');
  if (classic) {
    printf("| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n");
    printf("| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\n");
  } else {
    printf("| GPU  Name                 Persistence-M | Bus-Id        %*sDisp.A | Volatile Uncorr. ECC |\n",
           l.mid - 22, "");
    printf("| Fan  Temp   Perf          Pwr:Usage/Cap | %*sMemory-Usage | GPU-Util  Compute M. |\n", l.mid - 14, "");
  }
  printf("|%*s|%*s|%*s|\n", l.left, "", l.mid, "", l.right, "MIG M. ");
  rule(&l, '=', '|', '|');
  for (i = 0; i < count(gpus); i++) {
    const gpuplan_value *g = at(gpus, i);
    char pm[8], ecc[24], fan[12], temp[12], perf[8], pwr[40], mem[96], util[12], mig[16];
    term_safe(dstr(g, "name"), name, sizeof name);
    if (classic && strlen(name) > 18) snprintf(name + 15, sizeof name - 15, "...");
    snprintf(pm, sizeof pm, "%s", disnull(g, "persistence_mode") ? "N/A" : dbool(g, "persistence_mode") ? "On" : "Off");
    if (dbool(g, "lost")) snprintf(ecc, sizeof ecc, "ERR!");
    else ifmt(ecc, sizeof ecc, g, "ecc.volatile_uncorrected", "%lld", "N/A");
    ifmt(fan, sizeof fan, g, "fan_speed", "%lld", "N/A");
    if (!disnull(g, "fan_speed")) snprintf(fan, sizeof fan, "%.0f%%", 100 * dnum(g, "fan_speed"));
    ifmt(temp, sizeof temp, g, "temperature.gpu_c", "%lldC", "N/A");
    ifmt(perf, sizeof perf, g, "pstate", "P%lld", "N/A");
    if (disnull(g, "power.draw_w") || disnull(g, "power.limit_w")) snprintf(pwr, sizeof pwr, "N/A");
    else if (l.mid == 24)
      snprintf(pwr, sizeof pwr, "%.0fW / %4.0fW", dnum(g, "power.draw_w"), dnum(g, "power.limit_w"));
    else
      snprintf(pwr, sizeof pwr, "%.0fW / %.0fW", dnum(g, "power.draw_w"), dnum(g, "power.limit_w"));
    snprintf(a, sizeof a, "%.0fMiB", dnum(g, "memory.used_bytes") / MiB);
    snprintf(b, sizeof b, "%.0fMiB", dnum(g, "memory.total_bytes") / MiB);
    if (l.mid == 24) snprintf(mem, sizeof mem, "%11s / %9s ", a, b);
    else snprintf(mem, sizeof mem, "%10s / %8s ", a, b);
    if (disnull(g, "utilization.gpu")) snprintf(util, sizeof util, "N/A");
    else snprintf(util, sizeof util, "%.0f%%", 100 * dnum(g, "utilization.gpu"));
    snprintf(mig, sizeof mig, "%s", disnull(g, "mig_mode") ? "N/A" : dbool(g, "mig_mode") ? "Enabled" : "Disabled");
    if (classic) {
      printf("| %3lld  %-18.18s  %-3s  | %-16s %3s | %20s |\n", (long long)dint(g, "index"), name, pm,
             dstr(g, "pci_bus_id"), "Off", ecc);
      printf("| %3s  %4s    %-3s%13s |%s| %7s %12s |\n", fan, temp, perf, pwr, mem, util,
             dbool(g, "lost") ? "ERR!" : disnull(g, "compute_mode") ? "N/A" : dstr(g, "compute_mode"));
    } else {
      printf("| %3lld  %-29.29s  %-3s |%*s%-16s %3s | %20s |\n", (long long)dint(g, "index"), name, pm,
             l.mid == 24 ? 3 : 1, "", dstr(g, "pci_bus_id"), "Off", ecc);
      printf("| %3s  %4s    %-3s%23s |%s| %7s %12s |\n", fan, temp, perf, pwr, mem, util,
             dbool(g, "lost") ? "ERR!" : disnull(g, "compute_mode") ? "N/A" : dstr(g, "compute_mode"));
    }
    snprintf(cell, sizeof cell, "%s ", mig);
    printf("|%*s|%*s|%*s|\n", l.left, "", l.mid, "", l.right, cell);
    rule(&l, '-', '+', '+');
  }
  printf("%*s\n", w + 2, "");
  full(&l, '-');
  boxed(&l, " Processes:");
  snprintf(line, sizeof line, "  GPU   GI   CI        PID   Type   Process name%*sGPU Memory ", l.proc_name_w - 12, "");
  boxed(&l, line);
  snprintf(line, sizeof line, "        ID   ID%*sUsage      ", l.proc_name_w + 21, "");
  boxed(&l, line);
  full(&l, '=');
  for (i = 0; i < count(gpus); i++) {
    const gpuplan_value *g = at(gpus, i), *ps = dv(g, "processes");
    for (k = 0; k < count(ps); k++) {
      const gpuplan_value *p = at(ps, k);
      char mb[32];
      term_safe(dstr(p, "name"), name, sizeof name);
      snprintf(mb, sizeof mb, "%.0fMiB", dnum(p, "used_bytes") / MiB);
      snprintf(line, sizeof line, "%5lld%5s%5s%11lld%7s   %-*.*s%10s ", (long long)dint(g, "index"), "N/A", "N/A",
               (long long)dint(p, "pid"), dstr(p, "type"), l.proc_name_w, l.proc_name_w, name, mb);
      boxed(&l, line);
      any++;
    }
  }
  if (!any) boxed(&l, "  No running processes found");
  full(&l, '-');
}

/* --- -L -------------------------------------------------------------------------- */

static void render_list(const gpuplan_value *r) {
  const gpuplan_value *gpus = dv(r, "gpus");
  size_t i;
  char name[160];
  for (i = 0; i < count(gpus); i++) {
    const gpuplan_value *g = at(gpus, i);
    if (dbool(g, "lost")) {
      printf("Unable to determine the device handle for GPU%s: GPU is lost.  Reboot the system to recover this GPU\n",
             dstr(g, "pci_bus_id"));
      continue;
    }
    printf("GPU %lld: %s (UUID: %s)\n", (long long)dint(g, "index"), term_safe(dstr(g, "name"), name, sizeof name),
           dstr(g, "uuid"));
  }
}

/* --- -q [-d ...] and -x ------------------------------------------------------------- */

static int shown(const smi_args *a, const char *what) {
  char buf[160], *tok, *next;
  if (!a->display[0]) return 1;
  snprintf(buf, sizeof buf, "%s", a->display);
  for (tok = buf; tok; tok = next) {
    next = strchr(tok, ',');
    if (next) *next++ = '\0';
    if (!strcmp(tok, what)) return 1;
  }
  return 0;
}

static void kv(int indent, const char *key, const char *val) {
  printf("%*s%-*s: %s\n", indent, "", 42 - indent, key, val);
}
static void head(int indent, const char *key) { printf("%*s%s\n", indent, "", key); }

static const char *na(const gpuplan_value *v, const char *path, const char *fmt, double scale, char *buf, size_t cap) {
  if (disnull(v, path)) return "N/A";
  snprintf(buf, cap, fmt, dnum(v, path) * scale);
  return buf;
}
static const char *yn(const gpuplan_value *v, const char *path, const char *t, const char *f) {
  return disnull(v, path) ? "N/A" : dbool(v, path) ? t : f;
}

static int has_reason(const gpuplan_value *g, const char *reason) {
  const gpuplan_value *rs = dv(g, "throttle.reasons");
  size_t i;
  for (i = 0; i < count(rs); i++)
    if (!strcmp(gpuplan_value_string(at(rs, i), NULL), reason)) return 1;
  return 0;
}

static void render_q(const gpuplan_value *r, const smi_args *a) {
  const gpuplan_value *gpus = dv(r, "gpus");
  size_t i, k;
  char b[96], name[160];
  int ampere;
  printf("\n==============NVSMI LOG==============\n\n");
  kv(0, "Timestamp", dstr(r, "timestamp_text"));
  kv(0, "Driver Version", disnull(r, "driver.version") ? "N/A" : dstr(r, "driver.version"));
  kv(0, "CUDA Version", disnull(r, "driver.cuda_version") ? "N/A" : dstr(r, "driver.cuda_version"));
  printf("\n");
  snprintf(b, sizeof b, "%lld", (long long)dint(r, "attached_gpus"));
  kv(0, "Attached GPUs", b);
  for (i = 0; i < count(gpus); i++) {
    const gpuplan_value *g = at(gpus, i);
    printf("GPU %s\n", dstr(g, "pci_bus_id"));
    if (dbool(g, "lost")) {
      kv(4, "Product Name", "Unknown Error");
      kv(4, "GPU is lost", "Reboot the system to recover this GPU");
      continue;
    }
    ampere = !disnull(g, "ecc.remapped_uncorrectable");
    if (!a->display[0]) {
      kv(4, "Product Name", term_safe(dstr(g, "name"), name, sizeof name));
      kv(4, "Product Architecture", disnull(g, "architecture") ? "N/A" : dstr(g, "architecture"));
      kv(4, "Display Mode", "Disabled");
      kv(4, "Display Active", "Disabled");
      kv(4, "Persistence Mode", yn(g, "persistence_mode", "Enabled", "Disabled"));
      head(4, "MIG Mode");
      kv(8, "Current", yn(g, "mig_mode", "Enabled", "Disabled"));
      kv(8, "Pending", yn(g, "mig_mode", "Enabled", "Disabled"));
      kv(4, "Serial Number", disnull(g, "serial") ? "N/A" : dstr(g, "serial"));
      kv(4, "GPU UUID", dstr(g, "uuid"));
      snprintf(b, sizeof b, "%lld", (long long)dint(g, "index"));
      kv(4, "Minor Number", b);
      kv(4, "VBIOS Version", disnull(g, "vbios_version") ? "N/A" : dstr(g, "vbios_version"));
      head(4, "PCI");
      kv(8, "Bus", disnull(g, "pci.bus") ? "N/A" : dstr(g, "pci.bus"));
      kv(8, "Device", disnull(g, "pci.device") ? "N/A" : dstr(g, "pci.device"));
      kv(8, "Domain", disnull(g, "pci.domain") ? "N/A" : dstr(g, "pci.domain"));
      kv(8, "Bus Id", dstr(g, "pci_bus_id"));
      head(8, "GPU Link Info");
      head(12, "PCIe Generation");
      kv(16, "Max", na(g, "pcie.gen_max", "%.0f", 1, b, sizeof b));
      kv(16, "Current", na(g, "pcie.gen", "%.0f", 1, b, sizeof b));
      head(12, "Link Width");
      kv(16, "Max", na(g, "pcie.width_max", "%.0fx", 1, b, sizeof b));
      kv(16, "Current", na(g, "pcie.width", "%.0fx", 1, b, sizeof b));
      kv(8, "Replays Since Reset", na(g, "pcie.replays", "%.0f", 1, b, sizeof b));
      kv(8, "Tx Throughput", na(g, "pcie.tx_bytes_s", "%.0f KB/s", 1 / 1024.0, b, sizeof b));
      kv(8, "Rx Throughput", na(g, "pcie.rx_bytes_s", "%.0f KB/s", 1 / 1024.0, b, sizeof b));
      kv(4, "Fan Speed", na(g, "fan_speed", "%.0f %%", 100, b, sizeof b));
    }
    if (shown(a, "PERFORMANCE")) {
      kv(4, "Performance State", na(g, "pstate", "P%.0f", 1, b, sizeof b));
      head(4, driver_major(r) >= 530 ? "Clocks Event Reasons" : "Clocks Throttle Reasons");
      if (disnull(g, "throttle.bits")) {
        kv(8, "Idle", "N/A");
      } else {
        static const struct { const char *label, *reason; int indent; } rs[] = {
          {"Idle", "gpu_idle", 8}, {"Applications Clocks Setting", "applications_clocks_setting", 8},
          {"SW Power Cap", "sw_power_cap", 8}, {"HW Slowdown", "hw_slowdown", 8},
          {"HW Thermal Slowdown", "hw_thermal_slowdown", 12}, {"HW Power Brake Slowdown", "hw_power_brake_slowdown", 12},
          {"Sync Boost", "sync_boost", 8}, {"SW Thermal Slowdown", "sw_thermal_slowdown", 8},
          {"Display Clock Setting", "display_clock_setting", 8}};
        for (k = 0; k < sizeof rs / sizeof rs[0]; k++)
          kv(rs[k].indent, rs[k].label, has_reason(g, rs[k].reason) ? "Active" : "Not Active");
      }
    }
    if (shown(a, "MEMORY")) {
      head(4, "FB Memory Usage");
      kv(8, "Total", na(g, "memory.total_bytes", "%.0f MiB", 1 / MiB, b, sizeof b));
      kv(8, "Reserved", na(g, "memory.reserved_bytes", "%.0f MiB", 1 / MiB, b, sizeof b));
      kv(8, "Used", na(g, "memory.used_bytes", "%.0f MiB", 1 / MiB, b, sizeof b));
      kv(8, "Free", na(g, "memory.free_bytes", "%.0f MiB", 1 / MiB, b, sizeof b));
      head(4, "BAR1 Memory Usage");
      kv(8, "Total", na(g, "memory.bar1_total_bytes", "%.0f MiB", 1 / MiB, b, sizeof b));
      kv(8, "Used", na(g, "memory.bar1_used_bytes", "%.0f MiB", 1 / MiB, b, sizeof b));
      if (disnull(g, "memory.bar1_total_bytes")) kv(8, "Free", "N/A");
      else {
        snprintf(b, sizeof b, "%.0f MiB", (dnum(g, "memory.bar1_total_bytes") - dnum(g, "memory.bar1_used_bytes")) / MiB);
        kv(8, "Free", b);
      }
    }
    if (shown(a, "COMPUTE") || !a->display[0])
      kv(4, "Compute Mode", disnull(g, "compute_mode") ? "N/A" : dstr(g, "compute_mode"));
    if (shown(a, "UTILIZATION")) {
      head(4, "Utilization");
      kv(8, "Gpu", na(g, "utilization.gpu", "%.0f %%", 100, b, sizeof b));
      kv(8, "Memory", na(g, "utilization.memory", "%.0f %%", 100, b, sizeof b));
      kv(8, "Encoder", na(g, "utilization.encoder", "%.0f %%", 100, b, sizeof b));
      kv(8, "Decoder", na(g, "utilization.decoder", "%.0f %%", 100, b, sizeof b));
    }
    if (shown(a, "ECC")) {
      head(4, "ECC Mode");
      kv(8, "Current", yn(g, "ecc.enabled", "Enabled", "Disabled"));
      kv(8, "Pending", yn(g, "ecc.enabled", "Enabled", "Disabled"));
      head(4, "ECC Errors");
      head(8, "Volatile");
      kv(12, "DRAM Correctable", na(g, "ecc.volatile_corrected", "%.0f", 1, b, sizeof b));
      kv(12, "DRAM Uncorrectable", na(g, "ecc.volatile_uncorrected", "%.0f", 1, b, sizeof b));
      head(8, "Aggregate");
      kv(12, "DRAM Correctable", na(g, "ecc.aggregate_corrected", "%.0f", 1, b, sizeof b));
      kv(12, "DRAM Uncorrectable", na(g, "ecc.aggregate_uncorrected", "%.0f", 1, b, sizeof b));
    }
    if (shown(a, "PAGE_RETIREMENT") || (a->display[0] && shown(a, "ECC") && !ampere) || !a->display[0]) {
      head(4, "Retired Pages");
      kv(8, "Single Bit ECC", na(g, "ecc.retired_sbe", "%.0f", 1, b, sizeof b));
      kv(8, "Double Bit ECC", na(g, "ecc.retired_dbe", "%.0f", 1, b, sizeof b));
      kv(8, "Pending Page Blacklist", yn(g, "ecc.retired_pending", "Yes", "No"));
    }
    if (shown(a, "ROW_REMAPPER") || (a->display[0] && shown(a, "ECC") && ampere) || !a->display[0]) {
      head(4, "Remapped Rows");
      kv(8, "Correctable Error", na(g, "ecc.remapped_correctable", "%.0f", 1, b, sizeof b));
      kv(8, "Uncorrectable Error", na(g, "ecc.remapped_uncorrectable", "%.0f", 1, b, sizeof b));
      kv(8, "Pending", yn(g, "ecc.remap_pending", "Yes", "No"));
      kv(8, "Remapping Failure Occurred", yn(g, "ecc.remap_failure", "Yes", "No"));
    }
    if (shown(a, "TEMPERATURE")) {
      head(4, "Temperature");
      kv(8, "GPU Current Temp", na(g, "temperature.gpu_c", "%.0f C", 1, b, sizeof b));
      kv(8, "GPU Shutdown Temp", na(g, "temperature.shutdown_c", "%.0f C", 1, b, sizeof b));
      kv(8, "GPU Slowdown Temp", na(g, "temperature.slowdown_c", "%.0f C", 1, b, sizeof b));
      kv(8, "Memory Current Temp", na(g, "temperature.memory_c", "%.0f C", 1, b, sizeof b));
    }
    if (shown(a, "POWER")) {
      head(4, driver_major(r) >= 545 ? "GPU Power Readings" : "Power Readings");
      kv(8, "Power Draw", na(g, "power.draw_w", "%.2f W", 1, b, sizeof b));
      kv(8, "Current Power Limit", na(g, "power.limit_w", "%.2f W", 1, b, sizeof b));
      kv(8, "Enforced Power Limit", na(g, "power.limit_w", "%.2f W", 1, b, sizeof b));
      kv(8, "Total Energy Consumption", na(g, "power.energy_j", "%.0f J", 1, b, sizeof b));
    }
    if (shown(a, "CLOCK")) {
      head(4, "Clocks");
      kv(8, "Graphics", na(g, "clocks.graphics_mhz", "%.0f MHz", 1, b, sizeof b));
      kv(8, "SM", na(g, "clocks.sm_mhz", "%.0f MHz", 1, b, sizeof b));
      kv(8, "Memory", na(g, "clocks.mem_mhz", "%.0f MHz", 1, b, sizeof b));
      head(4, "Max Clocks");
      kv(8, "Graphics", na(g, "clocks.max_graphics_mhz", "%.0f MHz", 1, b, sizeof b));
      kv(8, "SM", na(g, "clocks.max_sm_mhz", "%.0f MHz", 1, b, sizeof b));
      kv(8, "Memory", na(g, "clocks.max_mem_mhz", "%.0f MHz", 1, b, sizeof b));
    }
    if (shown(a, "PIDS")) {
      const gpuplan_value *ps = dv(g, "processes");
      head(4, "Processes");
      if (!count(ps)) printf("%8sNone\n", "");
      for (k = 0; k < count(ps); k++) {
        const gpuplan_value *p = at(ps, k);
        kv(8, "GPU instance ID", "N/A");
        kv(8, "Compute instance ID", "N/A");
        snprintf(b, sizeof b, "%lld", (long long)dint(p, "pid"));
        kv(8, "Process ID", b);
        kv(8, "Type", dstr(p, "type"));
        kv(8, "Name", term_safe(dstr(p, "name"), name, sizeof name));
        snprintf(b, sizeof b, "%.0f MiB", dnum(p, "used_bytes") / MiB);
        kv(8, "Used GPU Memory", b);
      }
    }
    printf("\n");
  }
}

/* XML text, escaped. */
static void xs(const char *s) {
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '<') fputs("&lt;", stdout);
    else if (c == '>') fputs("&gt;", stdout);
    else if (c == '&') fputs("&amp;", stdout);
    else if (c == '"') fputs("&quot;", stdout);
    else if (c < 0x20 && c != '\t') printf("&#%d;", c);
    else putchar(c);
  }
}
static void xe(int indent, const char *tag, const char *val) {
  printf("%*s<%s>", indent, "", tag);
  xs(val);
  printf("</%s>\n", tag);
}

static void render_xml(const gpuplan_value *r) {
  const gpuplan_value *gpus = dv(r, "gpus");
  size_t i, k;
  char b[96];
  printf("<?xml version=\"1.0\" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM \"nvsmi_device_v12.dtd\">\n<nvidia_smi_log>\n");
  xe(1, "timestamp", dstr(r, "timestamp_text"));
  xe(1, "driver_version", disnull(r, "driver.version") ? "N/A" : dstr(r, "driver.version"));
  xe(1, "cuda_version", disnull(r, "driver.cuda_version") ? "N/A" : dstr(r, "driver.cuda_version"));
  snprintf(b, sizeof b, "%lld", (long long)dint(r, "attached_gpus"));
  xe(1, "attached_gpus", b);
  for (i = 0; i < count(gpus); i++) {
    const gpuplan_value *g = at(gpus, i);
    printf("\t<gpu id=\"");
    xs(dstr(g, "pci_bus_id"));
    printf("\">\n");
    if (dbool(g, "lost")) {
      xe(2, "product_name", "Unknown Error");
      printf("\t</gpu>\n");
      continue;
    }
    xe(2, "product_name", dstr(g, "name"));
    xe(2, "product_architecture", disnull(g, "architecture") ? "N/A" : dstr(g, "architecture"));
    xe(2, "persistence_mode", yn(g, "persistence_mode", "Enabled", "Disabled"));
    printf("\t\t<mig_mode>\n");
    xe(3, "current_mig", yn(g, "mig_mode", "Enabled", "Disabled"));
    printf("\t\t</mig_mode>\n");
    xe(2, "serial", disnull(g, "serial") ? "N/A" : dstr(g, "serial"));
    xe(2, "uuid", dstr(g, "uuid"));
    snprintf(b, sizeof b, "%lld", (long long)dint(g, "index"));
    xe(2, "minor_number", b);
    xe(2, "vbios_version", disnull(g, "vbios_version") ? "N/A" : dstr(g, "vbios_version"));
    printf("\t\t<pci>\n");
    xe(3, "pci_bus", disnull(g, "pci.bus") ? "N/A" : dstr(g, "pci.bus") + 2);
    xe(3, "pci_device", disnull(g, "pci.device") ? "N/A" : dstr(g, "pci.device") + 2);
    xe(3, "pci_domain", disnull(g, "pci.domain") ? "N/A" : dstr(g, "pci.domain") + 2);
    xe(3, "pci_bus_id", dstr(g, "pci_bus_id"));
    printf("\t\t\t<pci_gpu_link_info>\n\t\t\t\t<pcie_gen>\n");
    xe(5, "max_link_gen", na(g, "pcie.gen_max", "%.0f", 1, b, sizeof b));
    xe(5, "current_link_gen", na(g, "pcie.gen", "%.0f", 1, b, sizeof b));
    printf("\t\t\t\t</pcie_gen>\n\t\t\t\t<link_widths>\n");
    xe(5, "max_link_width", na(g, "pcie.width_max", "%.0fx", 1, b, sizeof b));
    xe(5, "current_link_width", na(g, "pcie.width", "%.0fx", 1, b, sizeof b));
    printf("\t\t\t\t</link_widths>\n\t\t\t</pci_gpu_link_info>\n\t\t</pci>\n");
    xe(2, "fan_speed", na(g, "fan_speed", "%.0f %%", 100, b, sizeof b));
    xe(2, "performance_state", na(g, "pstate", "P%.0f", 1, b, sizeof b));
    printf("\t\t<clocks_event_reasons>\n");
    xe(3, "clocks_event_reason_gpu_idle", has_reason(g, "gpu_idle") ? "Active" : "Not Active");
    xe(3, "clocks_event_reason_sw_power_cap", has_reason(g, "sw_power_cap") ? "Active" : "Not Active");
    xe(3, "clocks_event_reason_hw_slowdown", has_reason(g, "hw_slowdown") ? "Active" : "Not Active");
    xe(3, "clocks_event_reason_sw_thermal_slowdown", has_reason(g, "sw_thermal_slowdown") ? "Active" : "Not Active");
    xe(3, "clocks_event_reason_hw_thermal_slowdown", has_reason(g, "hw_thermal_slowdown") ? "Active" : "Not Active");
    printf("\t\t</clocks_event_reasons>\n\t\t<fb_memory_usage>\n");
    xe(3, "total", na(g, "memory.total_bytes", "%.0f MiB", 1 / MiB, b, sizeof b));
    xe(3, "reserved", na(g, "memory.reserved_bytes", "%.0f MiB", 1 / MiB, b, sizeof b));
    xe(3, "used", na(g, "memory.used_bytes", "%.0f MiB", 1 / MiB, b, sizeof b));
    xe(3, "free", na(g, "memory.free_bytes", "%.0f MiB", 1 / MiB, b, sizeof b));
    printf("\t\t</fb_memory_usage>\n");
    xe(2, "compute_mode", disnull(g, "compute_mode") ? "N/A" : dstr(g, "compute_mode"));
    printf("\t\t<utilization>\n");
    xe(3, "gpu_util", na(g, "utilization.gpu", "%.0f %%", 100, b, sizeof b));
    xe(3, "memory_util", na(g, "utilization.memory", "%.0f %%", 100, b, sizeof b));
    xe(3, "encoder_util", na(g, "utilization.encoder", "%.0f %%", 100, b, sizeof b));
    xe(3, "decoder_util", na(g, "utilization.decoder", "%.0f %%", 100, b, sizeof b));
    printf("\t\t</utilization>\n\t\t<ecc_mode>\n");
    xe(3, "current_ecc", yn(g, "ecc.enabled", "Enabled", "Disabled"));
    printf("\t\t</ecc_mode>\n\t\t<ecc_errors>\n\t\t\t<volatile>\n");
    xe(4, "dram_correctable", na(g, "ecc.volatile_corrected", "%.0f", 1, b, sizeof b));
    xe(4, "dram_uncorrectable", na(g, "ecc.volatile_uncorrected", "%.0f", 1, b, sizeof b));
    printf("\t\t\t</volatile>\n\t\t\t<aggregate>\n");
    xe(4, "dram_correctable", na(g, "ecc.aggregate_corrected", "%.0f", 1, b, sizeof b));
    xe(4, "dram_uncorrectable", na(g, "ecc.aggregate_uncorrected", "%.0f", 1, b, sizeof b));
    printf("\t\t\t</aggregate>\n\t\t</ecc_errors>\n\t\t<retired_pages>\n");
    xe(3, "multiple_single_bit_retirement", na(g, "ecc.retired_sbe", "%.0f", 1, b, sizeof b));
    xe(3, "double_bit_retirement", na(g, "ecc.retired_dbe", "%.0f", 1, b, sizeof b));
    xe(3, "pending_blacklist", yn(g, "ecc.retired_pending", "Yes", "No"));
    printf("\t\t</retired_pages>\n\t\t<remapped_rows>\n");
    xe(3, "remapped_row_corr", na(g, "ecc.remapped_correctable", "%.0f", 1, b, sizeof b));
    xe(3, "remapped_row_unc", na(g, "ecc.remapped_uncorrectable", "%.0f", 1, b, sizeof b));
    xe(3, "remapped_row_pending", yn(g, "ecc.remap_pending", "Yes", "No"));
    xe(3, "remapped_row_failure", yn(g, "ecc.remap_failure", "Yes", "No"));
    printf("\t\t</remapped_rows>\n\t\t<temperature>\n");
    xe(3, "gpu_temp", na(g, "temperature.gpu_c", "%.0f C", 1, b, sizeof b));
    xe(3, "gpu_temp_max_threshold", na(g, "temperature.shutdown_c", "%.0f C", 1, b, sizeof b));
    xe(3, "gpu_temp_slow_threshold", na(g, "temperature.slowdown_c", "%.0f C", 1, b, sizeof b));
    xe(3, "memory_temp", na(g, "temperature.memory_c", "%.0f C", 1, b, sizeof b));
    printf("\t\t</temperature>\n\t\t<gpu_power_readings>\n");
    xe(3, "power_draw", na(g, "power.draw_w", "%.2f W", 1, b, sizeof b));
    xe(3, "current_power_limit", na(g, "power.limit_w", "%.2f W", 1, b, sizeof b));
    printf("\t\t</gpu_power_readings>\n\t\t<clocks>\n");
    xe(3, "graphics_clock", na(g, "clocks.graphics_mhz", "%.0f MHz", 1, b, sizeof b));
    xe(3, "sm_clock", na(g, "clocks.sm_mhz", "%.0f MHz", 1, b, sizeof b));
    xe(3, "mem_clock", na(g, "clocks.mem_mhz", "%.0f MHz", 1, b, sizeof b));
    printf("\t\t</clocks>\n\t\t<max_clocks>\n");
    xe(3, "graphics_clock", na(g, "clocks.max_graphics_mhz", "%.0f MHz", 1, b, sizeof b));
    xe(3, "sm_clock", na(g, "clocks.max_sm_mhz", "%.0f MHz", 1, b, sizeof b));
    xe(3, "mem_clock", na(g, "clocks.max_mem_mhz", "%.0f MHz", 1, b, sizeof b));
    printf("\t\t</max_clocks>\n\t\t<processes>\n");
    {
      const gpuplan_value *ps = dv(g, "processes");
      for (k = 0; k < count(ps); k++) {
        const gpuplan_value *p = at(ps, k);
        printf("\t\t\t<process_info>\n");
        xe(4, "gpu_instance_id", "N/A");
        xe(4, "compute_instance_id", "N/A");
        snprintf(b, sizeof b, "%lld", (long long)dint(p, "pid"));
        xe(4, "pid", b);
        xe(4, "type", dstr(p, "type"));
        xe(4, "process_name", dstr(p, "name"));
        snprintf(b, sizeof b, "%.0f MiB", dnum(p, "used_bytes") / MiB);
        xe(4, "used_memory", b);
        printf("\t\t\t</process_info>\n");
      }
    }
    printf("\t\t</processes>\n\t</gpu>\n\n");
  }
  printf("</nvidia_smi_log>\n");
}

/* --- topo -m ---------------------------------------------------------------------- */

static void render_topo(const gpuplan_value *r) {
  const gpuplan_value *topo = dv(r, "topology"), *gpus = dv(r, "gpus");
  size_t i, k;
  for (k = 0; k < count(topo); k++) printf("\tGPU%lld", (long long)dint(at(topo, k), "gpu"));
  printf("\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n");
  for (i = 0; i < count(topo); i++) {
    const gpuplan_value *row = at(topo, i), *links = dv(row, "links"), *g = at(gpus, i);
    printf("GPU%lld", (long long)dint(row, "gpu"));
    for (k = 0; k < count(links); k++) {
      const char *c = dstr(at(links, k), "cell");
      printf("\t%s", !strcmp(c, "X") ? " X " : c[0] ? c : "N/A");
    }
    printf("\t%s", disnull(g, "cpu_affinity") ? "N/A" : dstr(g, "cpu_affinity"));
    if (disnull(g, "numa_node")) printf("\tN/A\t\tN/A\n");
    else printf("\t%lld\t\tN/A\n", (long long)dint(g, "numa_node"));
  }
  printf("\nLegend:\n\n"
         "  X    = Self\n"
         "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n"
         "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node\n"
         "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
         "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)\n"
         "  PIX  = Connection traversing at most a single PCIe bridge\n"
         "  NV#  = Connection traversing a bonded set of # NVLinks\n");
}

/* --- dmon and pmon ------------------------------------------------------------------ */

static void cell(const gpuplan_value *g, const char *path, double scale) {
  if (disnull(g, path)) printf(" %6s", "-");
  else printf(" %6.0f", dnum(g, path) * scale);
}

static void render_dmon(const gpuplan_value *r, const char *sel) {
  static const struct { char group; const char *name, *unit, *path; double scale; } cols[] = {
    {'p', "pwr", "W", "power_w", 1}, {'p', "gtemp", "C", "temperature_c", 1},
    {'p', "mtemp", "C", "memory_temperature_c", 1}, {'u', "sm", "%", "sm_util", 100},
    {'u', "mem", "%", "mem_util", 100}, {'u', "enc", "%", "enc_util", 100}, {'u', "dec", "%", "dec_util", 100},
    {'c', "mclk", "MHz", "mem_clock_mhz", 1}, {'c', "pclk", "MHz", "sm_clock_mhz", 1},
    {'v', "pviol", "%", "power_violation", 100}, {'v', "tviol", "%", "thermal_violation", 100},
    {'m', "fb", "MB", "fb_used_bytes", 1 / MiB}, {'m', "bar1", "MB", "bar1_used_bytes", 1 / MiB},
    {'e', "sbecc", "errs", "ecc_sbe", 1}, {'e', "dbecc", "errs", "ecc_dbe", 1}, {'e', "pci", "errs", "pcie_replays", 1},
    {'t', "rxpci", "MB/s", "pcie_rx_bytes_s", 1 / MiB}, {'t', "txpci", "MB/s", "pcie_tx_bytes_s", 1 / MiB},
  };
  const gpuplan_value *samples = dv(r, "samples");
  const char *s = sel && *sel ? sel : "puc";
  size_t i, k, c;
  printf("# gpu");
  for (c = 0; c < sizeof cols / sizeof cols[0]; c++)
    if (strchr(s, cols[c].group)) printf(" %6s", cols[c].name);
  printf(" \n# Idx");
  for (c = 0; c < sizeof cols / sizeof cols[0]; c++)
    if (strchr(s, cols[c].group)) printf(" %6s", cols[c].unit);
  printf(" \n");
  for (i = 0; i < count(samples); i++) {
    const gpuplan_value *gs = dv(at(samples, i), "gpus");
    for (k = 0; k < count(gs); k++) {
      const gpuplan_value *g = at(gs, k);
      printf("%5lld", (long long)dint(g, "index"));
      for (c = 0; c < sizeof cols / sizeof cols[0]; c++)
        if (strchr(s, cols[c].group)) cell(g, cols[c].path, cols[c].scale);
      printf(" \n");
    }
  }
}

static void render_pmon(const gpuplan_value *r, const char *sel) {
  const gpuplan_value *samples = dv(r, "samples");
  const char *s = sel && *sel ? sel : "u";
  int mem = strchr(s, 'm') != NULL, util = strchr(s, 'u') != NULL;
  size_t i, k, p;
  printf("# gpu         pid   type%s%s    command\n", mem ? "     fb" : "", util ? "     sm    mem    enc    dec" : "");
  printf("# Idx           #    C/G%s%s    name\n", mem ? "     MB" : "", util ? "      %      %      %      %" : "");
  for (i = 0; i < count(samples); i++) {
    const gpuplan_value *gs = dv(at(samples, i), "gpus");
    for (k = 0; k < count(gs); k++) {
      const gpuplan_value *g = at(gs, k), *ps = dv(g, "processes");
      if (!count(ps)) {
        printf("%5lld %11s %6s%s%s    %s\n", (long long)dint(g, "index"), "-", "-", mem ? "      -" : "",
               util ? "      -      -      -      -" : "", "-");
        continue;
      }
      for (p = 0; p < count(ps); p++) {
        const gpuplan_value *q = at(ps, p);
        const char *name = dstr(q, "name"), *base = strrchr(name, '/');
        char nm[160];
        printf("%5lld %11lld %6s", (long long)dint(g, "index"), (long long)dint(q, "pid"), dstr(q, "type"));
        if (mem) printf(" %6.0f", dnum(q, "used_bytes") / MiB);
        if (util) {
          cell(q, "sm_util", 100);
          cell(q, "mem_util", 100);
          printf(" %6s %6s", "-", "-");
        }
        printf("    %s\n", term_safe(base ? base + 1 : name, nm, sizeof nm));
      }
    }
  }
}

/* --- nvlink -s / -c ---------------------------------------------------------------- */

static void render_nvlink(const gpuplan_value *r, int caps) {
  const gpuplan_value *gpus = dv(r, "gpus");
  size_t i, k;
  char name[160];
  for (i = 0; i < count(gpus); i++) {
    const gpuplan_value *g = at(gpus, i), *up = dv(g, "nvlink.link_up");
    printf("GPU %lld: %s (UUID: %s)\n", (long long)dint(g, "index"), term_safe(dstr(g, "name"), name, sizeof name),
           dstr(g, "uuid"));
    if (count(up) && !dint(g, "nvlink.up") && !caps) {
      printf("NVML: Unable to retrieve NVLink information as all links are inActive\n");
      continue;
    }
    for (k = 0; k < count(up); k++) {
      int on = gpuplan_value_bool(at(up, k));
      if (caps) {
        if (!on) continue;
        printf("\t Link %zu, P2P is supported: true\n", k);
        printf("\t Link %zu, Access to system memory supported: true\n", k);
        printf("\t Link %zu, P2P atomics supported: true\n", k);
        printf("\t Link %zu, System memory atomics supported: true\n", k);
        printf("\t Link %zu, SLI is supported: true\n", k);
        printf("\t Link %zu, Link is supported: false\n", k);
      } else if (on && disnull(g, "nvlink.link_gbps")) {
        printf("\t Link %zu: N/A\n", k);
      } else if (on) {
        printf("\t Link %zu: %g GB/s\n", k, dnum(g, "nvlink.link_gbps"));
      } else {
        printf("\t Link %zu: <inactive>\n", k);
      }
    }
  }
}

/* --- --query-gpu / --query-compute-apps -------------------------------------------- */

static void render_rows(const gpuplan_value *r, int header) {
  const gpuplan_value *fields = dv(r, "query.fields"), *rows = dv(r, "rows");
  int units = dbool(r, "query.units");
  size_t i, k;
  char buf[256];
  if (header && dbool(r, "query.header")) {
    for (k = 0; k < count(fields); k++) {
      const char *u = dstr(at(fields, k), "unit");
      printf("%s%s", k ? ", " : "", dstr(at(fields, k), "name"));
      if (units && *u) printf(" [%s]", u);
    }
    printf("\n");
  }
  for (i = 0; i < count(rows); i++) {
    const gpuplan_value *row = at(rows, i);
    for (k = 0; k < count(fields) && k < gpuplan_value_count(row); k++) {
      const gpuplan_value *v = gpuplan_value_at(row, k);
      const char *u = dstr(at(fields, k), "unit");
      if (k) printf(", ");
      switch (gpuplan_value_type_of(v)) {
      case GPUPLAN_VALUE_NULL: printf("[N/A]"); continue;
      case GPUPLAN_VALUE_INT: printf("%lld", (long long)gpuplan_value_int(v)); break;
      case GPUPLAN_VALUE_REAL: printf("%.2f", gpuplan_value_real(v)); break;
      default: printf("%s", term_safe(gpuplan_value_string(v, NULL), buf, sizeof buf)); break;
      }
      if (units && *u) printf(" %s", u);
    }
    printf("\n");
  }
}

/* --- smi --------------------------------------------------------------------------- */

static int smi_render_one(cli *c, smi_args *a, gpuplan_doc *doc, int first) {
  const gpuplan_value *r = gpuplan_doc_root(doc);
  (void)c;
  if (!dbool(r, "driver.available")) {
    /* nvidia-smi's own words when the driver is missing or broken, and its exit status */
    if (strcmp(dstr(r, "source"), "mock") == 0 || strcmp(dstr(r, "driver.error_code"), "GPUPLAN_EUNSUPPORTED") == 0)
      fprintf(stderr, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
                      "that the latest NVIDIA driver is installed and running.\n");
    if (strcmp(dstr(r, "source"), "mock") != 0) fprintf(stderr, "gpuplan: %s\n", dstr(r, "driver.error"));
    return 9; /* nvidia-smi's exit status when the driver is not loaded */
  }
  if (a->query) {
    render_rows(r, first);
    return EXIT_OK;
  }
  if ((a->view == V_TOPO || a->view == V_DMON || a->view == V_PMON || a->view == V_NVLINK_S ||
       a->view == V_NVLINK_C) && !dbool(r, "driver.telemetry")) {
    fprintf(stderr, "gpuplan: smi: %s\n", dstr(r, "driver.telemetry_error"));
    return EXIT_RUNTIME;
  }
  switch (a->view) {
  case V_QUERY: if (a->xml) render_xml(r); else render_q(r, a); break;
  case V_XML: render_xml(r); break;
  case V_LIST: render_list(r); break;
  case V_TOPO: render_topo(r); break;
  case V_DMON: render_dmon(r, a->select); break;
  case V_PMON: render_pmon(r, a->select); break;
  case V_NVLINK_S: render_nvlink(r, 0); break;
  case V_NVLINK_C: render_nvlink(r, 1); break;
  default: render_table(r); break;
  }
  return EXIT_OK;
}

static void sleep_s(double s) {
  struct timespec ts;
  ts.tv_sec = (time_t)s;
  ts.tv_nsec = (long)((s - floor(s)) * 1e9);
  while (nanosleep(&ts, &ts) != 0) {}
}

/* Render, and with -l / -lms again every loop_s seconds (a mock node's
 * clock moves with it) until interrupted. */
static int smi_render(cli *c, smi_args *a, gpuplan_doc *doc) {
  int rc = smi_render_one(c, a, doc, 1);
  double base = dnum(gpuplan_doc_root(doc), "seconds");
  long k;
  if (rc || a->loop_s <= 0) return rc;
  for (k = 1;; k++) {
    gpuplan_doc *next = NULL;
    fflush(stdout);
    sleep_s(a->loop_s);
    if (isfinite(base) && (rc = gpuplan_job_set_real(c->job, "load", base + (double)k * a->loop_s)))
      return cli_job_fail(c, "smi", rc);
    if ((rc = gpuplan_job_run(c->job, "smi", &next))) return cli_job_fail(c, "smi", rc);
    rc = smi_render_one(c, a, next, 0);
    gpuplan_doc_free(next);
    if (rc) return rc;
  }
}

static int set(cli *c, const char *name, const char *v) {
  int rc = gpuplan_job_set(c->job, name, v);
  return rc ? -cli_job_fail(c, "smi", rc) : 0;
}

/* nvidia-smi's argument forms. */
static int smi_extra(cli *c, void *payload, int argc, char **argv, int i) {
  smi_args *a = payload;
  const char *s = argv[i];
  const char *v = i + 1 < argc ? argv[i + 1] : NULL;
  int rc;
#define NEED(what)                                                                           \
  do {                                                                                       \
    if (!v) return -cli_fail(c, EXIT_USAGE, "smi: %s needs a value", what);                  \
  } while (0)
  if (!strncmp(s, "--format", 8)) {
    a->format_given = 1;
    return 0;
  }
  if (!strncmp(s, "--query-gpu", 11) || !strncmp(s, "--query-compute-apps", 20)) {
    a->query = 1;
    return 0;
  }
  if (!strcmp(s, "topo")) return a->view = a->sub = V_TOPO, 1;
  if (!strcmp(s, "dmon")) return a->view = a->sub = V_DMON, 1;
  if (!strcmp(s, "pmon")) return a->view = a->sub = V_PMON, 1;
  if (!strcmp(s, "nvlink")) return a->view = a->sub = V_NVLINK_S, 1;
  if (a->sub == V_TOPO && (!strcmp(s, "-m") || !strcmp(s, "--matrix"))) return 1;
  if (a->sub == V_NVLINK_S && (!strcmp(s, "-s") || !strcmp(s, "--status"))) return a->view = V_NVLINK_S, 1;
  if (a->sub == V_NVLINK_S && (!strcmp(s, "-c") || !strcmp(s, "--capabilities"))) return a->view = V_NVLINK_C, 1;
  if ((a->sub == V_DMON || a->sub == V_PMON) && !strcmp(s, "-c")) {
    NEED("-c");
    return (rc = set(c, "samples", v)) ? rc : 2;
  }
  if ((a->sub == V_DMON || a->sub == V_PMON) && !strcmp(s, "-d")) {
    NEED("-d");
    return (rc = set(c, "interval", v)) ? rc : 2;
  }
  if ((a->sub == V_DMON || a->sub == V_PMON) && !strcmp(s, "-s")) {
    NEED("-s");
    if (strlen(v) >= sizeof a->select || strspn(v, a->sub == V_DMON ? "pucvmet" : "um") != strlen(v))
      return -cli_fail(c, EXIT_USAGE, "smi: %s -s takes letters of %s", a->sub == V_DMON ? "dmon" : "pmon",
                       a->sub == V_DMON ? "pucvmet" : "um");
    snprintf(a->select, sizeof a->select, "%s", v);
    return 2;
  }
  if (!strcmp(s, "-q") || !strcmp(s, "--query")) return a->view = V_QUERY, 1;
  if (!strcmp(s, "-x") || !strcmp(s, "--xml-format")) {
    a->xml = 1;
    if (a->view == V_TABLE) a->view = V_XML;
    return 1;
  }
  if (!strcmp(s, "-L") || !strcmp(s, "--list-gpus")) return a->view = V_LIST, 1;
  if (!strcmp(s, "-d") || !strncmp(s, "--display=", 10)) {
    const char *d = s[1] == 'd' ? v : s + 10;
    size_t k;
    static const char *known[] = {"MEMORY", "UTILIZATION", "ECC", "TEMPERATURE", "POWER", "CLOCK", "COMPUTE",
                                  "PIDS", "PERFORMANCE", "PAGE_RETIREMENT", "ROW_REMAPPER"};
    char buf[160], *tok, *next;
    if (!d) return -cli_fail(c, EXIT_USAGE, "smi: -d needs a value");
    if (strlen(d) >= sizeof a->display) return -cli_fail(c, EXIT_USAGE, "smi: -d: too long");
    for (k = 0; d[k]; k++) buf[k] = (char)toupper((unsigned char)d[k]);
    buf[k] = '\0';
    snprintf(a->display, sizeof a->display, "%s", buf);
    for (tok = buf; tok; tok = next) {
      next = strchr(tok, ',');
      if (next) *next++ = '\0';
      for (k = 0; k < sizeof known / sizeof known[0] && strcmp(known[k], tok); k++) {}
      if (k == sizeof known / sizeof known[0])
        return -cli_fail(c, EXIT_USAGE, "smi: -d '%s' is not one of MEMORY, UTILIZATION, ECC, TEMPERATURE, POWER, "
                         "CLOCK, COMPUTE, PIDS, PERFORMANCE, PAGE_RETIREMENT, ROW_REMAPPER", tok);
    }
    if (a->view == V_TABLE) a->view = V_QUERY;
    return s[1] == 'd' ? 2 : 1;
  }
  if (!strcmp(s, "-i")) {
    NEED("-i");
    return (rc = set(c, "gpu_ids", v)) ? rc : 2;
  }
  if (!strcmp(s, "-l") || !strncmp(s, "--loop=", 7) || !strcmp(s, "-lms") || !strncmp(s, "--loop-ms=", 10)) {
    const char *x = s[1] == 'l' ? v : strchr(s, '=') + 1;
    int ms = !strcmp(s, "-lms") || !strncmp(s, "--loop-ms=", 10);
    char *end;
    double n;
    if (!x) return -cli_fail(c, EXIT_USAGE, "smi: %s needs a value", s);
    n = strtod(x, &end);
    if (*end || !(n >= 1) || n > (ms ? 3.6e6 : 3600) || n != floor(n))
      return -cli_fail(c, EXIT_USAGE, "smi: %s takes an integer 1..%s", s, ms ? "3600000 (ms)" : "3600 (s)");
    a->loop_s = ms ? n / 1000 : n;
    return s[1] == 'l' && s[2] != '-' && (s[2] == 0 || !strcmp(s, "-lms")) ? 2 : 1;
  }
#undef NEED
  return 0;
}

static const char smi_usage[] =
    "usage: gpuplan smi [--sim SKU[:N] [--fault NAME[@GPU]]... [--job MODEL] ...] [-i ID[,ID...]]\n"
    "                   [-L | -q [-d TYPES] | -x | --query-gpu=FIELDS --format=csv[,noheader][,nounits]\n"
    "                    | --query-compute-apps=FIELDS --format=csv | topo -m | dmon [-s pucvmet] [-c N]\n"
    "                    | pmon [-s um] [-c N] | nvlink -s | nvlink -c] [-l SECONDS | -lms MS] [--json]";
static const char smi_about[] =
    "The nvidia-smi view of this machine's GPUs (the CUDA driver and NVML, loaded\n"
    "at run time) or of simulated ones: N mock GPUs of a catalog SKU running a\n"
    "training program, with the seven problems of the seed article as faults\n"
    "(oom, cuda-mismatch, gpu-not-found, ecc, thermal, data-starvation, nvlink-down).\n"
    "nvidia-smi's forms work as nvidia-smi's: -L lists the GPUs, -q [-d MEMORY,\n"
    "UTILIZATION,ECC,TEMPERATURE,POWER,CLOCK,COMPUTE,PIDS,PERFORMANCE] prints the\n"
    "details, -x as XML, -i selects GPUs, -l N repeats every N seconds, topo -m the\n"
    "interconnect with CPU/NUMA affinity, dmon/pmon samples, nvlink -s/-c links.\n"
    "--json prints one document with every field (schema gpuplan.smi/1); --csv\n"
    "the query's rows.  Exit status as nvidia-smi's: 9 when the driver cannot be\n"
    "reached, else 0, 1 (run-time error) or 2 (usage error).\n";

int cmd_smi(cli *c, int argc, char **argv) {
  int cmd = gpuplan_command_find("smi"), rc, code;
  smi_args a;
  gpuplan_job *job = NULL;
  gpuplan_doc *doc = NULL;
  cli_out out;
  memset(&a, 0, sizeof a);
  if ((rc = cli_catalog(c))) return rc;
  if ((rc = gpuplan_job_new(c->ctx, c->cat, &job))) return cli_lib_fail(c, rc);
  c->job = job;
  code = cli_parse(c, cmd, argc, argv, job, &out, smi_extra, &a);
  if (!code && out.help) cli_help(cmd, smi_usage, smi_about, stdout);
  else if (!code && a.query && !a.format_given && out.format == FMT_TABLE)
    code = cli_fail(c, EXIT_USAGE, "smi: --query-gpu and --query-compute-apps need --format=csv[,noheader][,nounits]");
  else if (!code && (rc = gpuplan_job_run(job, "smi", &doc)))
    code = cli_job_fail(c, "smi", rc);
  else if (!code && out.format != FMT_TABLE)
    code = cli_emit(c, "smi", doc, out.format);
  else if (!code)
    code = smi_render(c, &a, doc);
  gpuplan_doc_free(doc);
  gpuplan_job_free(job);
  c->job = NULL;
  return code;
}

/* --- doctor ------------------------------------------------------------------------- */

static int doctor_render(cli *c, gpuplan_doc *doc) {
  const gpuplan_value *r = gpuplan_doc_root(doc), *fs = dv(r, "findings");
  size_t i, k;
  char buf[1600];
  (void)c;
  printf("gpuplan doctor: %s\n\n", dstr(r, "target"));
  for (i = 0; i < count(fs); i++) {
    const gpuplan_value *f = at(fs, i), *cmds = dv(f, "commands"), *nv = dv(f, "nvidia_smi");
    const char *lvl = dstr(f, "level");
    printf("[%s] %s\n", !strcmp(lvl, "fail") ? "FAIL" : !strcmp(lvl, "warn") ? "WARN" : lvl,
           term_safe(dstr(f, "message"), buf, sizeof buf));
    if (!disnull(f, "fix")) printf("       fix: %s\n", term_safe(dstr(f, "fix"), buf, sizeof buf));
    for (k = 0; k < count(cmds); k++)
      printf("       see: %s   (%s)\n", gpuplan_value_string(at(cmds, k), NULL), gpuplan_value_string(at(nv, k), NULL));
  }
  printf("\n%lld failure(s), %lld warning(s)\n", (long long)dint(r, "failures"), (long long)dint(r, "warnings"));
  return dbool(r, "ok") ? EXIT_OK : EXIT_RUNTIME;
}

static const char doctor_about[] =
    "Check a GPU environment and print findings with fixes: the driver, the\n"
    "framework's CUDA runtime against it (CUDA's minor-version compatibility:\n"
    "a 12.x runtime runs on any 525.60.13+ driver), the framework's kernels\n"
    "against each GPU's architecture (PyTorch's wheel arch lists), devices\n"
    "visible, GPUs lost, ECC, NVLink, throttling, utilisation, other processes\n"
    "holding memory.  GPUs that look alike are reported together, each finding\n"
    "with the gpuplan smi and nvidia-smi commands that show it.  On this machine\n"
    "through the CUDA driver, or on simulated GPUs with injected faults.\n"
    "--json prints the findings as one document (schema gpuplan.doctor/1).\n"
    "Exit status 0 when nothing fails, 1 otherwise.\n";

/* As cli_run, but a failed check exits 1 with --json too (cron jobs read
 * the document and the status). */
int cmd_doctor(cli *c, int argc, char **argv) {
  static const char usage[] =
      "usage: gpuplan doctor [--sim SKU[:N] [--fault NAME[@GPU]]...] [--torch-cuda X.Y] [--torch 2.8] [--json]";
  int cmd = gpuplan_command_find("doctor"), rc, code;
  gpuplan_job *job = NULL;
  gpuplan_doc *doc = NULL;
  cli_out out;
  if ((rc = cli_catalog(c))) return rc;
  if ((rc = gpuplan_job_new(c->ctx, c->cat, &job))) return cli_lib_fail(c, rc);
  c->job = job;
  code = cli_parse(c, cmd, argc, argv, job, &out, NULL, NULL);
  if (!code && out.help) cli_help(cmd, usage, doctor_about, stdout);
  else if (!code && (rc = gpuplan_job_run(job, "doctor", &doc))) code = cli_job_fail(c, "doctor", rc);
  else if (!code && out.format != FMT_TABLE) {
    code = cli_emit(c, "doctor", doc, out.format);
    if (!code && !dbool(gpuplan_doc_root(doc), "ok")) code = EXIT_RUNTIME;
  } else if (!code)
    code = doctor_render(c, doc);
  gpuplan_doc_free(doc);
  gpuplan_job_free(job);
  c->job = NULL;
  return code;
}
