/* fields.c: descriptors of the record structs; the catalog loader, the CLI
 * and the bindings all render records from these, so a new column is added
 * in one place.  Field names equal the SQL column names. */
#include "catalog/catalog_int.h"

#define F(T, name, type, unit) {#name, GPUPLAN_FIELD_##type, offsetof(T, name), unit}

static const gpuplan_field gpu_fields[] = {
  F(gpuplan_gpu, id, STRING, ""),
  F(gpuplan_gpu, name, STRING, ""),
  F(gpuplan_gpu, vendor, STRING, ""),
  F(gpuplan_gpu, architecture, STRING, ""),
  F(gpuplan_gpu, chip, STRING, ""),
  F(gpuplan_gpu, compute_capability, STRING, ""),
  F(gpuplan_gpu, form_factor, STRING, ""),
  F(gpuplan_gpu, sm_count, REAL, "count"),
  F(gpuplan_gpu, cuda_cores, REAL, "count"),
  F(gpuplan_gpu, tensor_cores, REAL, "count"),
  F(gpuplan_gpu, memory_gb, REAL, "GB (marketed)"),
  F(gpuplan_gpu, memory_bytes, UINT, "bytes"),
  F(gpuplan_gpu, memory_type, STRING, ""),
  F(gpuplan_gpu, mem_bw_bytes_s, REAL, "bytes/s"),
  F(gpuplan_gpu, l2_bytes, REAL, "bytes"),
  F(gpuplan_gpu, fp64_flops, REAL, "FLOP/s"),
  F(gpuplan_gpu, fp64_tensor_flops, REAL, "FLOP/s"),
  F(gpuplan_gpu, fp32_flops, REAL, "FLOP/s"),
  F(gpuplan_gpu, tf32_flops, REAL, "FLOP/s"),
  F(gpuplan_gpu, bf16_flops, REAL, "FLOP/s"),
  F(gpuplan_gpu, fp16_flops, REAL, "FLOP/s"),
  F(gpuplan_gpu, fp8_flops, REAL, "FLOP/s"),
  F(gpuplan_gpu, int8_ops, REAL, "OP/s"),
  F(gpuplan_gpu, fp4_flops, REAL, "FLOP/s"),
  F(gpuplan_gpu, nvlink_gen, REAL, ""),
  F(gpuplan_gpu, nvlink_bw_bytes_s, REAL, "bytes/s"),
  F(gpuplan_gpu, pcie_gen, REAL, ""),
  F(gpuplan_gpu, tdp_w, REAL, "W"),
  F(gpuplan_gpu, boost_clock_mhz, REAL, "MHz"),
  F(gpuplan_gpu, tensor_clock_mhz, REAL, "MHz"),
  F(gpuplan_gpu, slowdown_temp_c, REAL, "C"),
  F(gpuplan_gpu, matmul_bf16_flops, REAL, "FLOP/s"),
  F(gpuplan_gpu, matmul_fp8_flops, REAL, "FLOP/s"),
  F(gpuplan_gpu, context_bytes, UINT, "bytes"),
  F(gpuplan_gpu, source, STRING, ""),
  F(gpuplan_gpu, note, STRING, ""),
  F(gpuplan_gpu, unverified, STRING, ""),
};

static const gpuplan_field fabric_fields[] = {
  F(gpuplan_fabric, id, STRING, ""),
  F(gpuplan_fabric, name, STRING, ""),
  F(gpuplan_fabric, kind, STRING, ""),
  F(gpuplan_fabric, scope, STRING, ""),
  F(gpuplan_fabric, generation, STRING, ""),
  F(gpuplan_fabric, bw_bytes_s, REAL, "bytes/s"),
  F(gpuplan_fabric, latency_s, REAL, "s"),
  F(gpuplan_fabric, source, STRING, ""),
  F(gpuplan_fabric, note, STRING, ""),
};

static const gpuplan_field node_fields[] = {
  F(gpuplan_node, id, STRING, ""),
  F(gpuplan_node, name, STRING, ""),
  F(gpuplan_node, provider, STRING, ""),
  F(gpuplan_node, gpu_id, STRING, ""),
  F(gpuplan_node, gpu_count, INT, "count"),
  F(gpuplan_node, gpu_fraction, REAL, ""),
  F(gpuplan_node, gpu_memory_bytes, UINT, "bytes"),
  F(gpuplan_node, intra_fabric_id, STRING, ""),
  F(gpuplan_node, inter_fabric_id, STRING, ""),
  F(gpuplan_node, nic_count, REAL, "count"),
  F(gpuplan_node, nic_bw_bytes_s, REAL, "bytes/s"),
  F(gpuplan_node, rail_optimized, REAL, ""),
  F(gpuplan_node, vcpus, INT, "count"),
  F(gpuplan_node, cpu, STRING, ""),
  F(gpuplan_node, cpu_fp32_flops, REAL, "FLOP/s"),
  F(gpuplan_node, ram_bytes, REAL, "bytes"),
  F(gpuplan_node, price_per_hour, REAL, "currency/h"),
  F(gpuplan_node, currency, STRING, ""),
  F(gpuplan_node, price_region, STRING, ""),
  F(gpuplan_node, price_date, STRING, ""),
  F(gpuplan_node, source, STRING, ""),
  F(gpuplan_node, note, STRING, ""),
};

static const gpuplan_field model_fields[] = {
  F(gpuplan_model, id, STRING, ""),
  F(gpuplan_model, name, STRING, ""),
  F(gpuplan_model, family, STRING, ""),
  F(gpuplan_model, arch, STRING, ""),
  F(gpuplan_model, params, REAL, "count"),
  F(gpuplan_model, layers, INT, "count"),
  F(gpuplan_model, hidden, INT, ""),
  F(gpuplan_model, heads, INT, "count"),
  F(gpuplan_model, kv_heads, INT, "count"),
  F(gpuplan_model, head_dim, INT, ""),
  F(gpuplan_model, ffn_hidden, INT, ""),
  F(gpuplan_model, ffn_type, STRING, ""),
  F(gpuplan_model, vocab, INT, "tokens"),
  F(gpuplan_model, seq_len, INT, "tokens"),
  F(gpuplan_model, max_seq_len, REAL, "tokens"),
  F(gpuplan_model, tied_embeddings, BOOL, ""),
  F(gpuplan_model, position, STRING, ""),
  F(gpuplan_model, norm, STRING, ""),
  F(gpuplan_model, linear_bias, BOOL, ""),
  F(gpuplan_model, experts, INT, "count"),
  F(gpuplan_model, top_k, INT, "count"),
  F(gpuplan_model, source, STRING, ""),
  F(gpuplan_model, note, STRING, ""),
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

const gpuplan__kind_info gpuplan__kinds[GPUPLAN_KIND_COUNT] = {
  {"gpu", "GPU", "gpu", gpu_fields, N(gpu_fields), sizeof(gpuplan_gpu)},
  {"fabric", "fabric", "fabric", fabric_fields, N(fabric_fields), sizeof(gpuplan_fabric)},
  {"node", "node", "node", node_fields, N(node_fields), sizeof(gpuplan_node)},
  {"model", "model", "model", model_fields, N(model_fields), sizeof(gpuplan_model)},
};

const gpuplan_field *gpuplan_kind_fields(gpuplan_kind kind, size_t *count_out) {
  if ((unsigned)kind >= GPUPLAN_KIND_COUNT) {
    if (count_out) *count_out = 0;
    return NULL;
  }
  if (count_out) *count_out = gpuplan__kinds[kind].nfields;
  return gpuplan__kinds[kind].fields;
}

const char *gpuplan_kind_name(gpuplan_kind kind) {
  if ((unsigned)kind >= GPUPLAN_KIND_COUNT) return NULL;
  return gpuplan__kinds[kind].name;
}
