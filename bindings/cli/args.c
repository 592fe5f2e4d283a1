/* args.c: command-line flags from the library's option table.
 *
 * Every option of a command is a flag: --name VALUE and --name=VALUE; a
 * boolean is --name (true) or --no-name; an enum whose choices are flags
 * (workload) also takes --train / --infer; the command's positional option
 * (MODEL, FILE, MESSAGE) is the first bare argument; "--" ends the flags.
 * The output flags --json and --csv, and -h/--help, are the CLI's own.
 * Values are parsed by the library (gpuplan_job_set), which names the
 * option and its allowed range in its errors; they exit 2, as do options
 * the command does not take. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int takes(const gpuplan_option_info *o, int cmd) { return (o->commands & (1u << cmd)) != 0; }

/* The option a flag names for this command (value flags included). */
static const gpuplan_option_info *find_flag(int cmd, const char *flag, int *neg, const char **value_flag) {
  size_t i;
  const gpuplan_option_info *o;
  *neg = 0;
  *value_flag = NULL;
  for (i = 0; (o = gpuplan_job_option(i)); i++) {
    if (!takes(o, cmd)) continue;
    if (strcmp(o->flag, flag) == 0) return o;
    if (o->type == GPUPLAN_OPT_BOOL && strncmp(flag, "no-", 3) == 0 && strcmp(o->flag, flag + 3) == 0) {
      *neg = 1;
      return o;
    }
    if (o->type == GPUPLAN_OPT_ENUM && (o->flags & GPUPLAN_OPTF_VALUE_FLAGS)) {
      const char *p = o->choices;
      size_t n = strlen(flag);
      while (p && *p) {
        size_t len = strcspn(p, "|");
        if (len == n && strncmp(p, flag, n) == 0) {
          *value_flag = flag;
          return o;
        }
        p += len;
        if (*p == '|') p++;
      }
    }
  }
  return NULL;
}

/* The nearest flag of the command, for "did you mean". */
static const char *nearest(int cmd, const char *flag) {
  size_t i;
  const gpuplan_option_info *o, *best = NULL;
  size_t bl = 0;
  for (i = 0; (o = gpuplan_job_option(i)); i++) {
    size_t k = 0;
    if (!takes(o, cmd)) continue;
    while (o->flag[k] && flag[k] && o->flag[k] == flag[k]) k++;
    if (k > bl) {
      bl = k;
      best = o;
    }
  }
  return best && bl >= 2 ? best->flag : NULL;
}

int cli_exit_code(int rc) {
  switch (rc) {
  case GPUPLAN_OK: return EXIT_OK;
  case GPUPLAN_EINVAL:
  case GPUPLAN_ENOTFOUND:
  case GPUPLAN_EAMBIGUOUS: return EXIT_USAGE;
  default: return EXIT_RUNTIME;
  }
}

int cli_job_fail(cli *c, const char *cmd, int rc) {
  const char *msg = gpuplan_errmsg(c->ctx);
  if (!msg || !*msg) msg = gpuplan_errstr(rc);
  return cli_fail(c, cli_exit_code(rc), "%s: %s", cmd, msg);
}

int cli_parse(cli *c, int cmd, int argc, char **argv, gpuplan_job *job, cli_out *out, cli_extra_fn extra,
              void *payload) {
  const char *name = gpuplan_command_name((size_t)cmd);
  const gpuplan_option_info *positional = NULL, *o;
  int i, rc, only_positional = 0, npos = 0;
  size_t k;
  for (k = 0; (o = gpuplan_job_option(k)); k++)
    if (takes(o, cmd) && (o->flags & GPUPLAN_OPTF_POSITIONAL)) positional = o;
  out->format = FMT_TABLE;
  out->help = 0;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    char flag[96];
    const char *value = NULL, *eq, *value_flag;
    int neg, used;
    if (!only_positional && cli_is_help(a)) {
      out->help = 1;
      return EXIT_OK;
    }
    if (!only_positional && strcmp(a, "--") == 0) {
      only_positional = 1;
      continue;
    }
    if (!only_positional && extra) {
      used = extra(c, payload, argc, argv, i);
      if (used < 0) return -used;
      if (used > 0) {
        i += used - 1;
        continue;
      }
    }
    if (only_positional || a[0] != '-' || !a[1]) {
      if (!positional || npos++)
        return cli_fail(c, EXIT_USAGE, "%s: unexpected argument '%s' (see gpuplan %s --help)", name, a, name);
      if ((rc = gpuplan_job_set(job, positional->name, a))) return cli_job_fail(c, name, rc);
      continue;
    }
    if (strcmp(a, "--json") == 0) {
      out->format = FMT_JSON;
      continue;
    }
    if (strcmp(a, "--csv") == 0) {
      out->format = FMT_CSV;
      continue;
    }
    if (a[1] != '-')
      return cli_fail(c, EXIT_USAGE, "%s: unknown option '%s' (see gpuplan %s --help)", name, a, name);
    eq = strchr(a, '=');
    snprintf(flag, sizeof flag, "%.*s", (int)(eq ? (size_t)(eq - a - 2) : strlen(a + 2)), a + 2);
    o = find_flag(cmd, flag, &neg, &value_flag);
    if (!o) {
      /* an unambiguous prefix, as getopt_long takes one (--global for --global-batch) */
      const gpuplan_option_info *hit = NULL;
      size_t fl = strlen(flag), nhit = 0;
      /* not when the flag is exactly another command's: that is a mistake to name */
      for (k = 0; (o = gpuplan_job_option(k)); k++)
        if (strcmp(o->flag, flag) == 0) fl = 0;
      for (k = 0; fl >= 3 && (o = gpuplan_job_option(k)); k++)
        if (takes(o, cmd) && strncmp(o->flag, flag, fl) == 0) {
          hit = o;
          nhit++;
        }
      o = NULL;
      if (nhit == 1) {
        snprintf(flag, sizeof flag, "%s", hit->flag);
        o = find_flag(cmd, flag, &neg, &value_flag);
      } else if (nhit > 1) {
        return cli_fail(c, EXIT_USAGE, "%s: --%.*s is ambiguous (it begins several flags of %s)", name, (int)fl,
                        flag, name);
      }
    }
    if (!o) {
      const gpuplan_option_info *any = gpuplan_job_option_find(flag, NULL);
      const char *near = nearest(cmd, flag);
      if (any)
        return cli_fail(c, EXIT_USAGE, "%s: --%s is not an option of %s", name, flag, name);
      if (near)
        return cli_fail(c, EXIT_USAGE, "%s: unknown option '--%s'; did you mean '--%s'? (see gpuplan %s --help)",
                        name, flag, near, name);
      return cli_fail(c, EXIT_USAGE, "%s: unknown option '--%s' (see gpuplan %s --help)", name, flag, name);
    }
    if (value_flag) {
      if (eq) return cli_fail(c, EXIT_USAGE, "%s: --%s takes no value", name, flag);
      rc = gpuplan_job_set(job, o->name, value_flag);
    } else if (o->type == GPUPLAN_OPT_BOOL) {
      if (eq) value = eq + 1;
      rc = value ? gpuplan_job_set(job, neg ? flag : o->name, value) : gpuplan_job_set_bool(job, o->name, !neg);
    } else {
      if (eq) {
        value = eq + 1;
      } else {
        if (i + 1 >= argc) return cli_fail(c, EXIT_USAGE, "%s: --%s needs a value", name, flag);
        value = argv[++i];
      }
      rc = gpuplan_job_set(job, o->name, value);
    }
    if (rc) return cli_job_fail(c, name, rc);
  }
  return EXIT_OK;
}

/* --- help from the table -------------------------------------------------- */

void cli_help(int cmd, const char *usage, const char *about, FILE *f) {
  size_t i, g;
  const gpuplan_option_info *o;
  const char *groups[32];
  size_t ng = 0;
  fprintf(f, "%s\n", usage);
  if (about && *about) fprintf(f, "\n%s", about);
  for (i = 0; (o = gpuplan_job_option(i)); i++) {
    if (!takes(o, cmd) || (o->flags & GPUPLAN_OPTF_POSITIONAL)) continue;
    for (g = 0; g < ng && strcmp(groups[g], o->group) != 0; g++) {}
    if (g == ng && ng < 32) groups[ng++] = o->group;
  }
  for (g = 0; g < ng; g++) {
    fprintf(f, "\n%s:\n", groups[g]);
    for (i = 0; (o = gpuplan_job_option(i)); i++) {
      char left[96];
      if (!takes(o, cmd) || (o->flags & GPUPLAN_OPTF_POSITIONAL) || strcmp(o->group, groups[g]) != 0) continue;
      if (o->type == GPUPLAN_OPT_BOOL)
        snprintf(left, sizeof left, "--%s, --no-%s", o->flag, o->flag);
      else if (o->type == GPUPLAN_OPT_ENUM && (o->flags & GPUPLAN_OPTF_VALUE_FLAGS)) {
        char buf[80];
        size_t k, n = 0;
        for (k = 0; o->choices[k] && n + 4 < sizeof buf; k++) {
          if (k == 0 || o->choices[k - 1] == '|') {
            if (k) buf[n++] = ' ';
            buf[n++] = '-';
            buf[n++] = '-';
          }
          if (o->choices[k] != '|') buf[n++] = o->choices[k];
        }
        buf[n] = 0;
        snprintf(left, sizeof left, "%s", buf);
      } else if (o->type == GPUPLAN_OPT_ENUM)
        snprintf(left, sizeof left, "--%s %s", o->flag, o->choices);
      else {
        char meta[40];
        size_t k;
        snprintf(meta, sizeof meta, "%s", o->flag);
        for (k = 0; meta[k]; k++) meta[k] = meta[k] == '-' ? '_' : (char)(meta[k] >= 'a' && meta[k] <= 'z' ? meta[k] - 32 : meta[k]);
        snprintf(left, sizeof left, "--%s %s", o->flag,
                 o->type == GPUPLAN_OPT_BYTES ? "MIB" : o->type == GPUPLAN_OPT_INT ? "N"
                 : o->type == GPUPLAN_OPT_REAL ? "X" : meta);
      }
      if (strlen(left) > 30) fprintf(f, "  %s\n  %-30s %s", left, "", o->help);
      else fprintf(f, "  %-30s %s", left, o->help);
      if (o->default_text && strcmp(o->default_text, "none") != 0) fprintf(f, " [%s]", o->default_text);
      fputc('\n', f);
    }
  }
  fprintf(f, "\noutput:\n  %-30s one JSON document (schema gpuplan.%s/1)\n", "--json", gpuplan_command_name((size_t)cmd));
  if (gpuplan_result_table(gpuplan_command_name((size_t)cmd)))
    fprintf(f, "  %-30s the document's table as CSV\n", "--csv");
  fprintf(f, "\nEvery flag also takes --flag=VALUE.  Exit status: 0 success, 1 run-time error, 2 usage error.\n");
}

/* --- output --------------------------------------------------------------- */

int cli_emit(cli *c, const char *cmd, gpuplan_doc *doc, cli_format fmt) {
  const char *s;
  size_t n;
  if (fmt == FMT_JSON) {
    s = gpuplan_doc_json(doc, GPUPLAN_JSON_PRETTY, &n);
  } else {
    s = gpuplan_doc_csv(doc, &n);
    if (!s) return cli_fail(c, EXIT_USAGE, "%s: %s", cmd, gpuplan_errmsg(c->ctx));
  }
  if (!s) return cli_fail(c, EXIT_RUNTIME, "%s: out of memory", cmd);
  fwrite(s, 1, n, stdout);
  return EXIT_OK;
}

/* Run one job-API command: parse, run, render. */
int cli_run(cli *c, int cmd, int argc, char **argv, const char *usage, const char *about, cli_render_fn render,
            cli_extra_fn extra, void *payload) {
  const char *name = gpuplan_command_name((size_t)cmd);
  gpuplan_job *job = NULL;
  gpuplan_doc *doc = NULL;
  cli_out out;
  int rc, code;
  if ((rc = cli_catalog(c))) return rc;
  if ((rc = gpuplan_job_new(c->ctx, c->cat, &job))) return cli_lib_fail(c, rc);
  c->job = job;
  code = cli_parse(c, cmd, argc, argv, job, &out, extra, payload);
  if (code || out.help) {
    if (!code) cli_help(cmd, usage, about, stdout);
    gpuplan_job_free(job);
    c->job = NULL;
    return code;
  }
  if (c->progress) gpuplan_job_set_progress(job, c->progress, c);
  rc = gpuplan_job_run(job, name, &doc);
  if (rc) {
    code = cli_job_fail(c, name, rc);
  } else if (out.format != FMT_TABLE) {
    code = cli_emit(c, name, doc, out.format);
  } else {
    code = render(c, doc);
  }
  if (!code && doc && c->status) code = c->status(doc);
  gpuplan_doc_free(doc);
  gpuplan_job_free(job);
  c->job = NULL;
  return code;
}

int cli_pass_alloc_env(cli *c, const char *cmd) {
  static const char *const vars[] = {"PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"};
  static const char *const opts[] = {"env_alloc_conf", "env_cuda_alloc_conf"};
  int k, rc;
  for (k = 0; k < 2; k++) {
    const char *v = getenv(vars[k]);
    /* set, even empty: 2.10 falls back to the other variable only when
     * PYTORCH_ALLOC_CONF is unset (the library reads an empty text as none) */
    if (v && (rc = gpuplan_job_set(c->job, opts[k], v))) return cli_job_fail(c, cmd, rc);
  }
  return 0;
}
