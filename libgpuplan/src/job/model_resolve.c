/*
 * model_resolve.c: the model of a planning job, however the job describes
 * it (job_int.h, gpuplan__model_resolve):
 *   - a catalog name ("llama-2-7b", "meta-llama/Llama-2-7b-hf");
 *   - a size ("70B"): the catalog model of that size, within 10%, and the
 *     documents say which; refused, naming the nearest, when there is none
 *     (a size never rescales another model's shape);
 *   - a Hugging Face config.json (a path ending in .json, or a directory
 *     holding one), read with SQLite's JSON functions for the families
 *     gpuplan knows; another model_type is an error naming what is missing;
 *   - hyperparameters as options (layers, hidden, heads, ...), alone or
 *     over any of the above;
 *   - a module traced by gpuplan.from_torch (module_* options).
 * The implementation profile that applies by default is the source's:
 * Megatron's published models run with fused kernels; everything else is
 * planned as eager PyTorch / Hugging Face code.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "job/job_int.h"

#define MAX_CONFIG (8u << 20) /* bytes of config.json read */
#define SIZE_TOLERANCE 0.10   /* a size names the catalog model within 10% */

static int mset(const gpuplan_job *j, int id) { return gpuplan__job_isset(j, MOPT(id)); }
static int64_t mint(const gpuplan_job *j, int id, int64_t d) { return gpuplan__job_int(j, MOPT(id), d); }
static double mreal(const gpuplan_job *j, int id, double d) { return gpuplan__job_real(j, MOPT(id), d); }

static const char *const ffn_names[] = {"gelu", "swiglu", "geglu", "relu", "relu2"};
static const char *const norm_names[] = {"layernorm", "rmsnorm"};
static const char *const pos_names[] = {"learned", "rope", "alibi", "relative"};
static const char *const arch_names[] = {"decoder", "encoder", "encoder-decoder"};

static void note_default(gpuplan__model_res *r, const char *option, const char *fmt, ...) GPUPLAN_PRINTF(3, 4);
static void note_default(gpuplan__model_res *r, const char *option, const char *fmt, ...) {
  va_list ap;
  if (r->ndflt >= GPUPLAN__MODEL_NOTES) return;
  r->dflt_option[r->ndflt] = option;
  va_start(ap, fmt);
  vsnprintf(r->dflt_value[r->ndflt], sizeof r->dflt_value[0], fmt, ap);
  va_end(ap);
  r->ndflt++;
}

static void note(gpuplan__model_res *r, const char *fmt, ...) GPUPLAN_PRINTF(2, 3);
static void note(gpuplan__model_res *r, const char *fmt, ...) {
  va_list ap;
  size_t n = strlen(r->note);
  if (n + 4 >= sizeof r->note) return;
  if (n) {
    memcpy(r->note + n, "; ", 3);
    n += 2;
  }
  va_start(ap, fmt);
  vsnprintf(r->note + n, sizeof r->note - n, fmt, ap);
  va_end(ap);
}

/* The fields of a model that the resolution fills with static text. */
static void model_blank(gpuplan_model *m) {
  memset(m, 0, sizeof *m);
  m->family = "custom";
  m->arch = "decoder";
  m->ffn_type = "swiglu";
  m->position = "rope";
  m->norm = "rmsnorm";
  m->max_seq_len = NAN;
  m->experts = 1;
  m->top_k = 1;
  m->source = "described by the job";
  m->note = "";
  m->params = NAN;
}

/* --- sizes ----------------------------------------------------------------- */

static double size_dist(double a, double b) { return fabs(log(a / b)); }

int gpuplan__model_of_size(gpuplan_job *j, const gpuplan_option_info *opt, const char *arg, double size,
                           gpuplan__model_res *r) {
  size_t i, n = gpuplan_catalog_count(j->cat, GPUPLAN_KIND_MODEL), k;
  const gpuplan_model *best = NULL, *near[3] = {NULL, NULL, NULL};
  char others[256] = "";
  for (i = 0; i < n; i++) {
    const gpuplan_model *m = gpuplan_catalog_at(j->cat, GPUPLAN_KIND_MODEL, i);
    double p = isfinite(m->params) && m->params > 0 ? m->params : gpuplan_model_params(m);
    if (!(p > 0)) continue;
    if (fabs(p / size - 1) <= SIZE_TOLERANCE) {
      if (!best || size_dist(p, size) < size_dist(best->params, size)) best = m;
    }
    for (k = 0; k < 3; k++) {
      if (!near[k] || size_dist(p, size) < size_dist(near[k]->params, size)) {
        memmove(near + k + 1, near + k, (2 - k) * sizeof near[0]);
        near[k] = m;
        break;
      }
    }
  }
  if (!best) {
    size_t len = 0;
    for (k = 0; k < 3 && near[k]; k++)
      len += (size_t)snprintf(others + len, sizeof others - len, "%s%s (%.4g B)", k ? ", " : "", near[k]->id,
                              near[k]->params / 1e9);
    return gpuplan__opt_error(j->ctx, GPUPLAN_ENOTFOUND, opt,
                              "no catalog model has %.4g B parameters (within 10%%), and a size is not a shape; "
                              "the nearest are %s. Name one of them, give a config.json, or describe the model "
                              "(layers, hidden, heads, kv_heads, ffn, vocab)",
                              size / 1e9, others);
  }
  r->base = r->m = best;
  r->source = "size";
  snprintf(r->label, sizeof r->label, "%s", best->id);
  {
    size_t len = 0;
    for (k = 0; k < 3 && near[k]; k++)
      if (near[k] != best && fabs(near[k]->params / size - 1) <= SIZE_TOLERANCE)
        len += (size_t)snprintf(others + len, sizeof others - len, "%s%s", len ? ", " : "", near[k]->id);
  }
  note(r, "%s: the catalog's %s (%.4g B parameters), the model of that size%s%s%s", arg, best->id, best->params / 1e9,
       others[0] ? "; also that size: " : "", others, others[0] ? "" : "");
  return GPUPLAN_OK;
}

/* --- config.json --------------------------------------------------------------- */

typedef struct cfg {
  gpuplan_ctx *ctx;
  sqlite3 *db;
  sqlite3_stmt *st;
  const char *json;
  int len;
  const char *path;
  char missing[512];
} cfg;

/* The JSON type of key ("integer", "real", "true", "false", "text", "null", "array", "object"), or NULL if absent. */
static const char *cfg_type(cfg *c, const char *key, char *buf, size_t cap) {
  char path[160];
  const unsigned char *t;
  snprintf(path, sizeof path, "$.%s", key);
  sqlite3_reset(c->st);
  sqlite3_bind_text(c->st, 1, c->json, c->len, SQLITE_STATIC);
  sqlite3_bind_text(c->st, 2, path, -1, SQLITE_TRANSIENT);
  if (sqlite3_step(c->st) != SQLITE_ROW || sqlite3_column_type(c->st, 0) == SQLITE_NULL) return NULL;
  t = sqlite3_column_text(c->st, 0);
  snprintf(buf, cap, "%s", t ? (const char *)t : "");
  return buf;
}

/* A number (integer or real) at key; 1 if present. */
static int cfg_num(cfg *c, const char *key, double *v) {
  char t[16];
  if (!cfg_type(c, key, t, sizeof t)) return 0;
  if (strcmp(t, "integer") && strcmp(t, "real")) return 0;
  *v = sqlite3_column_double(c->st, 1);
  return 1;
}

static int cfg_bool(cfg *c, const char *key, int dflt) {
  char t[16];
  if (!cfg_type(c, key, t, sizeof t)) return dflt;
  if (!strcmp(t, "true")) return 1;
  if (!strcmp(t, "false")) return 0;
  if (!strcmp(t, "integer")) return sqlite3_column_int(c->st, 1) != 0;
  return dflt;
}

static int cfg_str(cfg *c, const char *key, char *buf, size_t cap) {
  char t[16];
  const unsigned char *s;
  if (!cfg_type(c, key, t, sizeof t) || strcmp(t, "text")) return 0;
  s = sqlite3_column_text(c->st, 1);
  snprintf(buf, cap, "%s", s ? (const char *)s : "");
  return 1;
}

/* A required integer: recorded as missing (with the option that can give it) when absent. */
static int64_t cfg_need(cfg *c, const char *key, const char *option, gpuplan_job *j, int opt_id) {
  double v;
  if (cfg_num(c, key, &v) && v >= 0 && v < 1e12) return (int64_t)v;
  if (!mset(j, opt_id)) {
    size_t n = strlen(c->missing);
    snprintf(c->missing + n, sizeof c->missing - n, "%s%s (%s)", n ? ", " : "", key, option);
  }
  return 0;
}

static int64_t cfg_int(cfg *c, const char *key, int64_t dflt) {
  double v;
  return cfg_num(c, key, &v) && v >= 0 && v < 1e12 ? (int64_t)v : dflt;
}

/* The families gpuplan reads, by model_type. */
static const char *const families =
    "llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, gemma, gemma2, phi3, gpt2, gpt_neox, falcon, "
    "bert, roberta, t5, deepseek_v2, deepseek_v3";

typedef struct famrow {
  const char *type, *family;
  int tied;    /* tie_word_embeddings when the config does not say (the config class's default) */
  int kind;    /* 0 Llama-style, 1 gpt2, 2 gpt_neox, 3 falcon, 4 bert/roberta, 5 t5, 6 deepseek */
} famrow;

static const famrow famtab[] = {
  {"llama", "llama", 0, 0},         {"mistral", "mistral", 0, 0},   {"mixtral", "mixtral", 0, 0},
  {"qwen2", "qwen2", 0, 0},         {"qwen2_moe", "qwen2-moe", 0, 0}, {"qwen3", "qwen3", 0, 0},
  {"qwen3_moe", "qwen3-moe", 0, 0}, {"gemma", "gemma", 1, 0},       {"gemma2", "gemma2", 1, 0},
  {"phi3", "phi3", 0, 0},           {"gpt2", "gpt-2", 1, 1},        {"gpt_neox", "gpt-neox", 0, 2},
  {"falcon", "falcon", 1, 3},       {"RefinedWeb", "falcon", 1, 3}, {"RefinedWebModel", "falcon", 1, 3},
  {"bert", "bert", 1, 4},           {"roberta", "roberta", 1, 4},   {"t5", "t5", 1, 5},
  {"deepseek_v2", "deepseek-v2", 0, 6}, {"deepseek_v3", "deepseek-v3", 0, 6},
};

static int read_file(gpuplan_ctx *ctx, const char *path, char **out, size_t *len) {
  FILE *f = fopen(path, "rb");
  char *buf;
  size_t n;
  if (!f) return gpuplan__error(ctx, GPUPLAN_ENOTFOUND, "model: cannot open %s", path);
  buf = gpuplan__malloc(ctx, MAX_CONFIG + 1);
  if (!buf) {
    fclose(f);
    return gpuplan__nomem(ctx);
  }
  n = fread(buf, 1, MAX_CONFIG + 1, f);
  if (ferror(f)) {
    fclose(f);
    gpuplan__free(ctx, buf);
    return gpuplan__error(ctx, GPUPLAN_EIO, "model: cannot read %s", path);
  }
  fclose(f);
  if (n > MAX_CONFIG) {
    gpuplan__free(ctx, buf);
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "model: %s is larger than a config.json (over %u MiB)", path,
                          MAX_CONFIG >> 20);
  }
  buf[n] = 0;
  *out = buf;
  *len = n;
  return GPUPLAN_OK;
}

/* The config's path if the model argument is one: a file ending in .json, or a directory holding config.json. */
static int config_path(const char *arg, char *path, size_t cap) {
  size_t n = strlen(arg);
  struct stat st;
  if (n > 5) {
    const char *e = arg + n - 5;
    if (tolower((unsigned char)e[0]) == '.' && tolower((unsigned char)e[1]) == 'j' &&
        tolower((unsigned char)e[2]) == 's' && tolower((unsigned char)e[3]) == 'o' &&
        tolower((unsigned char)e[4]) == 'n') {
      snprintf(path, cap, "%s", arg);
      return 1;
    }
  }
  if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) {
    snprintf(path, cap, "%s%sconfig.json", arg, n && arg[n - 1] == '/' ? "" : "/");
    return stat(path, &st) == 0;
  }
  return 0;
}

static int read_config(gpuplan_job *j, const char *path, gpuplan__model_res *r, gpuplan_memory_options *o) {
  gpuplan_model *m = &r->model;
  char *json = NULL, type[64] = "", arch0[128] = "", act[64] = "", ffproj[64] = "", name[128] = "";
  size_t len = 0, i;
  const famrow *fam = NULL;
  cfg c;
  int rc = GPUPLAN_OK;
  int64_t maxpos;
  memset(&c, 0, sizeof c);
  GPUPLAN_TRY(read_file(j->ctx, path, &json, &len));
  c.ctx = j->ctx;
  c.json = json;
  c.len = (int)len;
  c.path = path;
  if (sqlite3_open_v2(":memory:", &c.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) !=
          SQLITE_OK ||
      sqlite3_prepare_v2(c.db, "SELECT json_type(?1, ?2), json_extract(?1, ?2)", -1, &c.st, NULL) != SQLITE_OK) {
    rc = gpuplan__error(j->ctx, GPUPLAN_ECATALOG, "model: SQLite's JSON functions are not available (%s)",
                        c.db ? sqlite3_errmsg(c.db) : "no database");
    goto out;
  }
  {
    sqlite3_stmt *vs = NULL;
    int ok = 0;
    if (sqlite3_prepare_v2(c.db, "SELECT json_valid(?1) AND json_type(?1) = 'object'", -1, &vs, NULL) == SQLITE_OK) {
      sqlite3_bind_text(vs, 1, json, (int)len, SQLITE_STATIC);
      ok = sqlite3_step(vs) == SQLITE_ROW && sqlite3_column_int(vs, 0);
    }
    sqlite3_finalize(vs);
    if (!ok) {
      rc = gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_MODEL), "%s is not a JSON object (a config.json)", path);
      goto out;
    }
  }
  cfg_str(&c, "model_type", type, sizeof type);
  cfg_str(&c, "architectures[0]", arch0, sizeof arch0);
  cfg_str(&c, "_name_or_path", name, sizeof name);
  for (i = 0; i < sizeof famtab / sizeof famtab[0]; i++)
    if (!strcmp(famtab[i].type, type)) fam = &famtab[i];
  model_blank(m);
  m->source = "a Hugging Face config.json";
  if (!fam && !mset(j, M_ARCH)) {
    /* Say what a reading with the Llama-style keys would miss. */
    cfg_need(&c, "num_hidden_layers", "layers", j, M_LAYERS);
    cfg_need(&c, "hidden_size", "hidden", j, M_HIDDEN);
    cfg_need(&c, "num_attention_heads", "heads", j, M_HEADS);
    cfg_need(&c, "intermediate_size", "ffn", j, M_FFN);
    cfg_need(&c, "vocab_size", "vocab", j, M_VOCAB);
    rc = gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_MODEL),
                            "%s: model_type '%s' is not a family gpuplan reads (%s). Give arch (and the shape "
                            "options for what is missing) to read it with the Llama-style keys; missing: %s",
                            path, type[0] ? type : "(none)", families, c.missing[0] ? c.missing : "nothing");
    goto out;
  }
  m->family = fam ? fam->family : "custom";
  if (!fam || fam->kind == 0 || fam->kind == 6) {
    m->layers = cfg_need(&c, "num_hidden_layers", "layers", j, M_LAYERS);
    m->hidden = cfg_need(&c, "hidden_size", "hidden", j, M_HIDDEN);
    m->heads = cfg_need(&c, "num_attention_heads", "heads", j, M_HEADS);
    m->kv_heads = cfg_int(&c, "num_key_value_heads", m->heads);
    m->head_dim = cfg_int(&c, "head_dim", m->heads ? m->hidden / m->heads : 0);
    m->ffn_hidden = cfg_need(&c, "intermediate_size", "ffn", j, M_FFN);
    m->vocab = cfg_need(&c, "vocab_size", "vocab", j, M_VOCAB);
    m->tied_embeddings = cfg_bool(&c, "tie_word_embeddings", fam ? fam->tied : 0);
    m->norm = "rmsnorm";
    m->position = "rope";
    m->linear_bias = cfg_bool(&c, "attention_bias", 0) && cfg_bool(&c, "mlp_bias", 0);
    if (cfg_bool(&c, "attention_bias", 0) && !m->linear_bias) o->qkv_bias = 1;
    if (!cfg_str(&c, "hidden_act", act, sizeof act)) cfg_str(&c, "hidden_activation", act, sizeof act);
    m->ffn_type = strstr(act, "gelu") ? "geglu" : "swiglu";
    maxpos = cfg_int(&c, "max_position_embeddings", 4096);
    if (fam && !strcmp(fam->type, "qwen2")) o->qkv_bias = 1; /* Qwen2 has q/k/v biases by design */
    if (fam && (!strcmp(fam->type, "qwen3") || !strcmp(fam->type, "qwen3_moe"))) o->qk_norm = 1;
    if (fam && !strcmp(fam->type, "gemma2")) o->extra_params += 2.0 * (double)m->hidden * (double)m->layers;
    if (fam && !strcmp(fam->type, "mixtral")) {
      m->experts = cfg_int(&c, "num_local_experts", 8);
      m->top_k = cfg_int(&c, "num_experts_per_tok", 2);
    }
    if (fam && (!strcmp(fam->type, "qwen2_moe") || !strcmp(fam->type, "qwen3_moe"))) {
      int64_t moe_layers;
      m->experts = cfg_int(&c, "num_experts", 1);
      m->top_k = cfg_int(&c, "num_experts_per_tok", 1);
      o->expert_ffn = cfg_int(&c, "moe_intermediate_size", m->ffn_hidden);
      if (cfg_int(&c, "shared_expert_intermediate_size", 0) > 0) {
        o->shared_experts = 1;
        o->shared_expert_ffn = cfg_int(&c, "shared_expert_intermediate_size", 0);
      }
      if (cfg_int(&c, "decoder_sparse_step", 1) > 1)
        note(r, "decoder_sparse_step %lld: planned as if every layer were MoE",
             (long long)cfg_int(&c, "decoder_sparse_step", 1));
      moe_layers = m->layers;
      if (o->shared_experts) o->extra_params += (double)m->hidden * (double)moe_layers; /* shared_expert_gate */
    }
    if (fam && fam->kind == 6) { /* DeepSeek-V2/V3: MLA and fine-grained MoE */
      int64_t nope = cfg_int(&c, "qk_nope_head_dim", 128), dense;
      o->kv_lora_rank = cfg_need(&c, "kv_lora_rank", "kv_lora_rank", j, M_KV_LORA_RANK);
      o->q_lora_rank = cfg_int(&c, "q_lora_rank", 0);
      o->qk_rope_dim = cfg_int(&c, "qk_rope_head_dim", 64);
      o->v_head_dim = cfg_int(&c, "v_head_dim", nope);
      m->head_dim = nope;
      m->kv_heads = m->heads;
      m->experts = cfg_int(&c, "n_routed_experts", 1);
      m->top_k = cfg_int(&c, "num_experts_per_tok", 1);
      o->expert_ffn = cfg_int(&c, "moe_intermediate_size", m->ffn_hidden);
      o->shared_experts = cfg_int(&c, "n_shared_experts", 0);
      o->shared_expert_ffn = o->expert_ffn;
      dense = cfg_int(&c, "first_k_dense_replace", 0);
      o->dense_layers = dense;
      if (cfg_int(&c, "moe_layer_freq", 1) > 1)
        note(r, "moe_layer_freq %lld: planned as if every layer after the dense ones were MoE",
             (long long)cfg_int(&c, "moe_layer_freq", 1));
      if (!strcmp(fam->type, "deepseek_v3")) {
        o->extra_params += (double)m->experts * (double)(m->layers - dense); /* e_score_correction_bias */
        if (cfg_int(&c, "num_nextn_predict_layers", 0) > 0)
          note(r, "the multi-token-prediction layer (num_nextn_predict_layers) is not part of the HF model and "
                  "is not counted");
      }
      m->ffn_type = "swiglu";
    }
  } else if (fam->kind == 1) { /* gpt2 */
    m->layers = cfg_need(&c, "n_layer", "layers", j, M_LAYERS);
    m->hidden = cfg_need(&c, "n_embd", "hidden", j, M_HIDDEN);
    m->heads = cfg_need(&c, "n_head", "heads", j, M_HEADS);
    m->kv_heads = m->heads;
    m->head_dim = m->heads ? m->hidden / m->heads : 0;
    m->ffn_hidden = cfg_int(&c, "n_inner", 4 * m->hidden);
    m->vocab = cfg_need(&c, "vocab_size", "vocab", j, M_VOCAB);
    m->tied_embeddings = cfg_bool(&c, "tie_word_embeddings", 1);
    m->ffn_type = "gelu";
    m->norm = "layernorm";
    m->position = "learned";
    m->linear_bias = 1;
    maxpos = cfg_int(&c, "n_positions", 1024);
  } else if (fam->kind == 2) { /* gpt_neox */
    m->layers = cfg_need(&c, "num_hidden_layers", "layers", j, M_LAYERS);
    m->hidden = cfg_need(&c, "hidden_size", "hidden", j, M_HIDDEN);
    m->heads = cfg_need(&c, "num_attention_heads", "heads", j, M_HEADS);
    m->kv_heads = m->heads;
    m->head_dim = m->heads ? m->hidden / m->heads : 0;
    m->ffn_hidden = cfg_need(&c, "intermediate_size", "ffn", j, M_FFN);
    m->vocab = cfg_need(&c, "vocab_size", "vocab", j, M_VOCAB);
    m->tied_embeddings = cfg_bool(&c, "tie_word_embeddings", 0);
    m->ffn_type = "gelu";
    m->norm = "layernorm";
    m->position = "rope";
    m->linear_bias = cfg_bool(&c, "attention_bias", 1);
    o->parallel_block = cfg_bool(&c, "use_parallel_residual", 1) ? 2 : 0;
    maxpos = cfg_int(&c, "max_position_embeddings", 2048);
  } else if (fam->kind == 3) { /* falcon */
    int newarch = cfg_bool(&c, "new_decoder_architecture", 0);
    m->layers = cfg_int(&c, "num_hidden_layers", cfg_int(&c, "n_layer", 0));
    if (!m->layers) m->layers = cfg_need(&c, "num_hidden_layers", "layers", j, M_LAYERS);
    m->hidden = cfg_need(&c, "hidden_size", "hidden", j, M_HIDDEN);
    m->heads = cfg_int(&c, "num_attention_heads", cfg_int(&c, "n_head", 0));
    if (!m->heads) m->heads = cfg_need(&c, "num_attention_heads", "heads", j, M_HEADS);
    m->kv_heads = newarch ? cfg_int(&c, "num_kv_heads", m->heads) : cfg_bool(&c, "multi_query", 1) ? 1 : m->heads;
    m->head_dim = m->heads ? m->hidden / m->heads : 0;
    m->ffn_hidden = cfg_int(&c, "ffn_hidden_size", 4 * m->hidden);
    m->vocab = cfg_need(&c, "vocab_size", "vocab", j, M_VOCAB);
    m->tied_embeddings = cfg_bool(&c, "tie_word_embeddings", 1);
    m->ffn_type = "gelu";
    m->norm = "layernorm";
    m->position = cfg_bool(&c, "alibi", 0) ? "alibi" : "rope";
    m->linear_bias = cfg_bool(&c, "bias", 0);
    o->parallel_block = cfg_bool(&c, "parallel_attn", 1) ? (newarch ? 2 : 1) : 0;
    maxpos = cfg_int(&c, "max_position_embeddings", 2048);
  } else if (fam->kind == 4) { /* bert, roberta */
    int64_t types;
    m->layers = cfg_need(&c, "num_hidden_layers", "layers", j, M_LAYERS);
    m->hidden = cfg_need(&c, "hidden_size", "hidden", j, M_HIDDEN);
    m->heads = cfg_need(&c, "num_attention_heads", "heads", j, M_HEADS);
    m->kv_heads = m->heads;
    m->head_dim = m->heads ? m->hidden / m->heads : 0;
    m->ffn_hidden = cfg_need(&c, "intermediate_size", "ffn", j, M_FFN);
    m->vocab = cfg_need(&c, "vocab_size", "vocab", j, M_VOCAB);
    m->tied_embeddings = 1;
    m->ffn_type = "gelu";
    m->norm = "layernorm";
    m->position = "learned";
    m->linear_bias = 1;
    m->arch = "encoder";
    maxpos = cfg_int(&c, "max_position_embeddings", 512);
    types = cfg_int(&c, "type_vocab_size", 2);
    o->extra_params += (double)types * (double)m->hidden;
    if (strstr(arch0, "ForSequenceClassification") || strstr(arch0, "ForTokenClassification")) {
      int64_t labels = cfg_int(&c, "num_labels", 0);
      if (!labels) {
        /* id2label's entries, else the 2 of the classification heads' default */
        char t[16];
        sqlite3_stmt *cs = NULL;
        if (cfg_type(&c, "id2label", t, sizeof t) &&
            sqlite3_prepare_v2(c.db, "SELECT count(*) FROM json_each(?1, '$.id2label')", -1, &cs, NULL) == SQLITE_OK) {
          sqlite3_bind_text(cs, 1, json, (int)len, SQLITE_STATIC);
          if (sqlite3_step(cs) == SQLITE_ROW) labels = sqlite3_column_int64(cs, 0);
        }
        sqlite3_finalize(cs);
      }
      o->head_labels = labels > 0 ? labels : 2;
    } else if (!strstr(arch0, "ForMaskedLM") && !strstr(arch0, "ForPreTraining") && arch0[0]) {
      note(r, "architectures[0] %s: planned with the masked-LM head", arch0);
    }
    /* RoBERTa offsets its positions by the padding index: its table has max_position_embeddings rows. */
  } else { /* t5 */
    int64_t buckets;
    m->layers = cfg_need(&c, "num_layers", "layers", j, M_LAYERS);
    m->hidden = cfg_need(&c, "d_model", "hidden", j, M_HIDDEN);
    m->heads = cfg_need(&c, "num_heads", "heads", j, M_HEADS);
    m->kv_heads = m->heads;
    m->head_dim = cfg_need(&c, "d_kv", "head_dim", j, M_HEAD_DIM);
    m->ffn_hidden = cfg_need(&c, "d_ff", "ffn", j, M_FFN);
    m->vocab = cfg_need(&c, "vocab_size", "vocab", j, M_VOCAB);
    m->tied_embeddings = cfg_bool(&c, "tie_word_embeddings", 1);
    cfg_str(&c, "feed_forward_proj", ffproj, sizeof ffproj);
    m->ffn_type = strstr(ffproj, "gated") ? "geglu" : "relu";
    m->norm = "rmsnorm";
    m->position = "relative";
    m->linear_bias = 0;
    m->arch = "encoder-decoder";
    o->decoder_layers = cfg_int(&c, "num_decoder_layers", m->layers);
    buckets = cfg_int(&c, "relative_attention_num_buckets", 32);
    o->extra_params += 2.0 * (double)buckets * (double)m->heads; /* first layer of each stack */
    maxpos = cfg_int(&c, "n_positions", 512);
  }
  if (c.missing[0]) {
    rc = gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_MODEL),
                            "%s (model_type %s) lacks %s; give them as options", path, type[0] ? type : "?",
                            c.missing);
    goto out;
  }
  {
    /* the training dropout the config states (0.0 for Llama-style families) */
    static const char *const keys[] = {"attention_dropout", "hidden_dropout", "attention_probs_dropout_prob",
                                       "hidden_dropout_prob", "attn_pdrop", "resid_pdrop", "embd_pdrop",
                                       "dropout_rate", "dropout"};
    size_t k;
    double dv;
    int any = 0, on = 0;
    for (k = 0; k < sizeof keys / sizeof keys[0]; k++)
      if (cfg_num(&c, keys[k], &dv)) any = 1, on |= dv > 0;
    r->dropout = any ? on : (fam && (fam->kind == 1 || fam->kind == 4 || fam->kind == 5) ? 1 : 0);
  }
  m->max_seq_len = (double)maxpos;
  m->seq_len = maxpos > 4096 ? 4096 : maxpos;
  if (maxpos > 4096)
    note_default(r, "seq_len", "4096 (the config allows %lld; give seq for longer)", (long long)maxpos);
  r->source = "config";
  if (name[0]) snprintf(r->label, sizeof r->label, "%s", name);
  else {
    /* the directory's name, else the file's */
    const char *p = path + strlen(path), *end;
    while (p > path && p[-1] == '/') p--;
    end = p;
    if (end - path > 12 && !strncmp(end - 11, "config.json", 11)) {
      end -= 11;
      while (end > path && end[-1] == '/') end--;
      p = end;
    }
    while (p > path && p[-1] != '/') p--;
    if (end - p > 5 && !strncmp(end - 5, ".json", 5)) end -= 5;
    snprintf(r->label, sizeof r->label, "%.*s", (int)(end - p), p);
  }
  note(r, "read from %s (model_type %s%s%s)", path, type[0] ? type : "?", arch0[0] ? ", " : "", arch0);
out:
  sqlite3_finalize(c.st);
  sqlite3_close(c.db);
  gpuplan__free(j->ctx, json);
  return rc;
}

/* --- options over (or instead of) a model ------------------------------------------ */

static int any_shape(const gpuplan_job *j) {
  int id;
  for (id = M_LAYERS; id <= M_EXTRA_PARAMS; id++)
    if (mset(j, id)) return 1;
  return 0;
}

static const char *choice(const gpuplan_job *j, int id, const char *const *names, size_t n, const char *dflt) {
  int64_t v = mint(j, id, -1);
  return v >= 0 && (size_t)v < n ? names[v] : dflt;
}

/* Apply the shape options to r->model (a copy of the base, or blank). */
static int apply_shape(gpuplan_job *j, gpuplan__model_res *r, gpuplan_memory_options *o, int alone) {
  gpuplan_model *m = &r->model;
  int64_t old_h = m->hidden, old_a = m->heads;
  int head_dim_derived = !alone && m->heads && m->head_dim * m->heads == m->hidden;
  int kv_same = !alone && m->kv_heads == m->heads;
  if (alone) {
    char missing[160] = "";
    size_t n = 0;
    static const struct { int id; const char *name; } req[] = {
      {M_LAYERS, "layers"}, {M_HIDDEN, "hidden"}, {M_HEADS, "heads"}, {M_VOCAB, "vocab"}};
    size_t i;
    for (i = 0; i < sizeof req / sizeof req[0]; i++)
      if (!mset(j, req[i].id)) n += (size_t)snprintf(missing + n, sizeof missing - n, "%s%s", n ? ", " : "", req[i].name);
    if (n)
      return gpuplan__error(j->ctx, GPUPLAN_EINVAL,
                            "model: a model described by its shape needs layers, hidden, heads and vocab (missing: "
                            "%s), or name a catalog model or a config.json to start from",
                            missing);
  }
  if (mset(j, M_LAYERS)) m->layers = mint(j, M_LAYERS, 0);
  if (mset(j, M_HIDDEN)) m->hidden = mint(j, M_HIDDEN, 0);
  if (mset(j, M_HEADS)) m->heads = mint(j, M_HEADS, 0);
  if (mset(j, M_VOCAB)) m->vocab = mint(j, M_VOCAB, 0);
  if (mset(j, M_FFN_TYPE)) m->ffn_type = choice(j, M_FFN_TYPE, ffn_names, 5, "swiglu");
  if (mset(j, M_NORM)) m->norm = choice(j, M_NORM, norm_names, 2, "rmsnorm");
  if (mset(j, M_POSITION)) m->position = choice(j, M_POSITION, pos_names, 4, "rope");
  if (mset(j, M_ARCH)) m->arch = choice(j, M_ARCH, arch_names, 3, "decoder");
  if (mset(j, M_TIED)) m->tied_embeddings = (int)mint(j, M_TIED, 0);
  if (mset(j, M_BIAS)) m->linear_bias = (int)mint(j, M_BIAS, 0);
  if (mset(j, M_KV_HEADS)) m->kv_heads = mint(j, M_KV_HEADS, 0);
  else if (alone || (kv_same && m->heads != old_a)) {
    m->kv_heads = m->heads;
    if (alone) note_default(r, "kv_heads", "%lld (= heads: multi-head attention)", (long long)m->kv_heads);
  }
  if (!mset(j, M_KV_HEADS) && m->kv_heads < 1) m->kv_heads = m->heads;
  if (mset(j, M_HEAD_DIM)) m->head_dim = mint(j, M_HEAD_DIM, 0);
  else if (alone || m->head_dim < 1 || (head_dim_derived && (m->hidden != old_h || m->heads != old_a))) {
    if (m->hidden % m->heads)
      return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, MOPT(M_HEAD_DIM),
                                "heads (%lld) do not divide hidden (%lld): give head_dim", (long long)m->heads,
                                (long long)m->hidden);
    m->head_dim = m->hidden / m->heads;
  }
  if (mset(j, M_FFN)) m->ffn_hidden = mint(j, M_FFN, 0);
  else if (alone) {
    int gated = !strcmp(m->ffn_type, "swiglu") || !strcmp(m->ffn_type, "geglu");
    m->ffn_hidden = gated ? (int64_t)ceil(8.0 * (double)m->hidden / 3 / 256) * 256 : 4 * m->hidden;
    note_default(r, "ffn", gated ? "%lld (8/3 x hidden, a multiple of 256: the Llama rule)" : "%lld (4 x hidden)",
                 (long long)m->ffn_hidden);
  }
  if (mset(j, M_MAX_SEQ)) {
    m->max_seq_len = (double)mint(j, M_MAX_SEQ, 0);
    if (alone || m->seq_len > m->max_seq_len) m->seq_len = (int64_t)m->max_seq_len;
    if (m->seq_len > 4096) m->seq_len = 4096;
  } else if (alone) {
    m->max_seq_len = 4096;
    m->seq_len = 4096;
    note_default(r, "max_seq", "4096");
  }
  if (mset(j, M_EXPERTS)) m->experts = mint(j, M_EXPERTS, 1);
  if (mset(j, M_TOP_K)) m->top_k = mint(j, M_TOP_K, 1);
  else if (m->experts > 1 && m->top_k < 1) m->top_k = 1;
  if (m->top_k > m->experts)
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, MOPT(M_TOP_K), "%lld is more than the %lld experts",
                              (long long)m->top_k, (long long)m->experts);
  if (alone) {
    if (!mset(j, M_FFN_TYPE)) note_default(r, "ffn_type", "swiglu");
    if (!mset(j, M_NORM)) note_default(r, "norm", "rmsnorm");
    if (!mset(j, M_POSITION)) note_default(r, "position", "rope");
    if (!mset(j, M_TIED)) note_default(r, "tied", "false");
  }
  if (mset(j, M_QKV_BIAS)) o->qkv_bias = (int)mint(j, M_QKV_BIAS, 0);
  if (mset(j, M_QK_NORM)) o->qk_norm = (int)mint(j, M_QK_NORM, 0);
  if (mset(j, M_PARALLEL)) o->parallel_block = (int)mint(j, M_PARALLEL, 0);
  if (mset(j, M_DECODER_LAYERS)) o->decoder_layers = mint(j, M_DECODER_LAYERS, 0);
  else if (mset(j, M_ARCH) && !strcmp(m->arch, "encoder-decoder") && !o->decoder_layers) {
    o->decoder_layers = m->layers;
    note_default(r, "decoder_layers", "%lld (= layers)", (long long)m->layers);
  }
  if (strcmp(m->arch, "encoder-decoder") && o->decoder_layers && mset(j, M_ARCH))
    o->decoder_layers = 0;
  if (mset(j, M_LABELS)) o->head_labels = mint(j, M_LABELS, 0);
  if (mset(j, M_EXPERT_FFN)) o->expert_ffn = mint(j, M_EXPERT_FFN, 0);
  if (mset(j, M_SHARED_EXPERTS)) o->shared_experts = mint(j, M_SHARED_EXPERTS, 0);
  if (mset(j, M_SHARED_EXPERT_FFN)) o->shared_expert_ffn = mint(j, M_SHARED_EXPERT_FFN, 0);
  if (mset(j, M_DENSE_LAYERS)) o->dense_layers = mint(j, M_DENSE_LAYERS, 0);
  if (mset(j, M_KV_LORA_RANK)) o->kv_lora_rank = mint(j, M_KV_LORA_RANK, 0);
  if (mset(j, M_Q_LORA_RANK)) o->q_lora_rank = mint(j, M_Q_LORA_RANK, 0);
  if (mset(j, M_QK_ROPE_DIM)) o->qk_rope_dim = mint(j, M_QK_ROPE_DIM, 0);
  if (mset(j, M_V_HEAD_DIM)) o->v_head_dim = mint(j, M_V_HEAD_DIM, 0);
  if (mset(j, M_EXTRA_PARAMS)) o->extra_params = mreal(j, M_EXTRA_PARAMS, 0);
  if (o->kv_lora_rank > 0) m->kv_heads = m->heads;
  if (m->heads && m->kv_heads && m->heads % m->kv_heads)
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, MOPT(M_KV_HEADS), "%lld do not divide the %lld heads",
                              (long long)m->kv_heads, (long long)m->heads);
  m->params = NAN;
  return GPUPLAN_OK;
}

/* A catalog family's training dropout: modern decoders train without it. */
static int family_dropout(const gpuplan_model *m) {
  static const char *const none[] = {"llama", "mistral", "mixtral", "qwen", "gemma", "deepseek", "phi", "falcon"};
  size_t i;
  if (!m || !m->family) return -1;
  for (i = 0; i < sizeof none / sizeof none[0]; i++)
    if (!strncmp(m->family, none[i], strlen(none[i]))) return 0;
  return -1;
}

/* The implementation profile that applies by default, and why. */
static void default_impl(gpuplan__model_res *r) {
  const char *fam = r->base ? r->base->family : NULL;
  if (strcmp(r->source, "config") && fam && (!strcmp(fam, "megatron-gpt") || !strcmp(fam, "gpt-3"))) {
    r->impl = GPUPLAN_IMPL_FUSED;
    r->impl_why = "fused: a Megatron-LM model, trained with Megatron-core's fused kernels (Korthikanti's count)";
  } else if (!strcmp(r->source, "module")) {
    r->impl = GPUPLAN_IMPL_EAGER;
    r->impl_why = "eager: a traced module, as eager PyTorch runs it (its saved tensors are counted as traced)";
  } else {
    r->impl = GPUPLAN_IMPL_EAGER;
    r->impl_why = "eager: planned as eager PyTorch / Hugging Face Transformers runs it (SDPA attention where it applies)";
  }
}

int gpuplan__model_resolve(gpuplan_job *j, gpuplan__model_res *r, gpuplan_memory_options *o) {
  const char *arg = gpuplan__job_str(j, JOPT(J_MODEL), NULL);
  char path[1024];
  double size;
  int shape = any_shape(j), rc;
  memset(r, 0, sizeof *r);
  r->dropout = -1;
  model_blank(&r->model);
  if (mset(j, M_MODULE_PARAMS)) {
    gpuplan_module_desc *md = &o->module;
    if (shape)
      return gpuplan__error(j->ctx, GPUPLAN_EINVAL,
                            "module_params: a traced module has no transformer shape; give one or the other");
    r->model.layers = r->model.hidden = r->model.heads = r->model.kv_heads = r->model.head_dim = 1;
    r->model.ffn_hidden = r->model.vocab = r->model.seq_len = 1;
    r->model.family = "module";
    r->model.source = "traced by gpuplan.from_torch";
    md->params = mreal(j, M_MODULE_PARAMS, 0);
    md->trainable = mreal(j, M_MODULE_TRAINABLE, md->params);
    md->buffer_bytes = mreal(j, M_MODULE_BUFFERS, 0);
    md->largest_param = mreal(j, M_MODULE_LARGEST, 0);
    md->act_bytes = mreal(j, M_MODULE_ACT, 0);
    md->fwd_extra_bytes = mreal(j, M_MODULE_FWD, 0);
    md->bwd_extra_bytes = mreal(j, M_MODULE_BWD, 0);
    md->out_bytes = mreal(j, M_MODULE_OUT, 0);
    md->in_bytes = mreal(j, M_MODULE_IN, 0);
    md->act_dtype_bytes = 4;
    if (md->trainable > md->params)
      return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, MOPT(M_MODULE_TRAINABLE), "%.0f is more than module_params (%.0f)",
                                md->trainable, md->params);
    r->model.params = md->params;
    r->m = &r->model;
    r->source = "module";
    snprintf(r->label, sizeof r->label, "%s", arg ? arg : "module");
    r->model.id = r->label;
    r->model.name = r->label;
    note(r, "a module traced by gpuplan.from_torch: %.0f parameters (%.0f trainable), %.0f bytes saved per sample",
         md->params, md->trainable, md->act_bytes);
    default_impl(r);
    return GPUPLAN_OK;
  }
  {
    int id;
    for (id = M_MODULE_TRAINABLE; id <= M_MODULE_IN; id++)
      if (mset(j, id))
        return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, MOPT(id), "describes a traced module: give module_params too");
  }
  if (arg && config_path(arg, path, sizeof path)) {
    GPUPLAN_TRY(read_config(j, path, r, o));
    r->m = &r->model;
  } else if (arg && gpuplan_parse_size(arg, &size)) {
    GPUPLAN_TRY(gpuplan__model_of_size(j, JOPT(J_MODEL), arg, size, r));
  } else if (arg) {
    const gpuplan_model *m = NULL;
    rc = gpuplan_catalog_model(j->cat, arg, &m);
    if (rc == GPUPLAN_OK) {
      r->base = r->m = m;
      r->source = "catalog";
      snprintf(r->label, sizeof r->label, "%s", m->id);
    } else if (rc == GPUPLAN_ENOTFOUND && shape) {
      /* a name for a model described by its shape */
      gpuplan__clear(j->ctx);
      snprintf(r->label, sizeof r->label, "%s", arg);
    } else {
      if (rc == GPUPLAN_ENOTFOUND) {
        char msg[GPUPLAN_ERRMSG_MAX];
        snprintf(msg, sizeof msg, "%s", gpuplan_errmsg(j->ctx));
        return gpuplan__error(j->ctx, rc, "%s (or give a config.json path, or describe it: layers, hidden, heads, "
                                          "vocab, ...)", msg);
      }
      return rc;
    }
  } else if (!shape) {
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_MODEL),
                              "a MODEL is required: a catalog name, a size (70B), a config.json, or its shape "
                              "(layers, hidden, heads, vocab, ...)");
  } else {
    snprintf(r->label, sizeof r->label, "custom");
  }
  if (shape) {
    int alone = !r->m;
    if (r->m && r->m != &r->model) r->model = *r->m;
    GPUPLAN_TRY(apply_shape(j, r, o, alone));
    r->model.id = r->label;
    r->model.name = r->label;
    if (alone) {
      r->model.family = "custom";
      r->model.source = "described by the job's options";
    }
    r->m = &r->model;
    if (!r->source || !strcmp(r->source, "catalog") || !strcmp(r->source, "size")) {
      if (r->base) note(r, "%s's shape with the given options over it", r->base->id);
      else note(r, "described by the given options");
      r->source = "shape";
    } else {
      note(r, "the given options over the config");
    }
  }
  if (r->m == &r->model && !r->model.id) {
    r->model.id = r->label;
    r->model.name = r->label;
  }
  if (r->dropout < 0) r->dropout = family_dropout(r->base);
  default_impl(r);
  return GPUPLAN_OK;
}
