-- gpuplan catalog schema, version 1.
--
-- Units are SI and explicit in every column name: bytes, bytes_s (bytes per
-- second), flops (FLOP/s, dense, no 2:4 sparsity), w (watts), mhz, s
-- (seconds).  A NULL numeric column means "not published / not found"; it is
-- never a guess.  Every row carries the source it was taken from.
--
-- Storage types are strict: SQLite keeps 'abc' in an INTEGER column, and text
-- sorts above every number, so CHECK (x > 0) alone lets it through (review
-- H2).  Each numeric column therefore checks typeof() as well.  Ranges are
-- checked when a catalog is read (libgpuplan/src/catalog/fields.c), which
-- also covers files made before these checks.

CREATE TABLE gpu (
  id                    TEXT PRIMARY KEY CHECK (typeof(id)='text'),  -- canonical id, lower case: 'h100-sxm5-80gb'
  name                  TEXT NOT NULL,         -- display name: 'H100 SXM5 80GB'
  vendor                TEXT NOT NULL DEFAULT 'NVIDIA',
  architecture          TEXT NOT NULL,         -- 'Hopper'
  chip                  TEXT,                  -- 'GH100'
  compute_capability    TEXT,                  -- '9.0'
  form_factor           TEXT,                  -- 'SXM5', 'PCIe'
  sm_count              INTEGER CHECK (typeof(sm_count) IN ('integer','null')),
  cuda_cores            INTEGER CHECK (typeof(cuda_cores) IN ('integer','null')),
  tensor_cores          INTEGER CHECK (typeof(tensor_cores) IN ('integer','null')),
  memory_gb             REAL NOT NULL CHECK (typeof(memory_gb)='real'),  -- the marketed figure, as the vendor writes it (80, 141)
  memory_bytes          INTEGER NOT NULL CHECK (typeof(memory_bytes)='integer'),  -- device memory in bytes (marketed HBM "GB" are GiB of DRAM)
  memory_type           TEXT,                  -- 'HBM3'
  mem_bw_bytes_s        REAL NOT NULL CHECK (typeof(mem_bw_bytes_s)='real'),  -- peak DRAM bandwidth, decimal (3.35e12)
  l2_bytes              INTEGER CHECK (typeof(l2_bytes) IN ('integer','null')),
  fp64_flops            REAL CHECK (typeof(fp64_flops) IN ('real','null')),
  fp64_tensor_flops     REAL CHECK (typeof(fp64_tensor_flops) IN ('real','null')),
  fp32_flops            REAL CHECK (typeof(fp32_flops) IN ('real','null')),
  tf32_flops            REAL CHECK (typeof(tf32_flops) IN ('real','null')),  -- dense tensor-core figures from here on
  bf16_flops            REAL CHECK (typeof(bf16_flops) IN ('real','null')),
  fp16_flops            REAL CHECK (typeof(fp16_flops) IN ('real','null')),
  fp8_flops             REAL CHECK (typeof(fp8_flops) IN ('real','null')),
  int8_ops              REAL CHECK (typeof(int8_ops) IN ('real','null')),
  fp4_flops             REAL CHECK (typeof(fp4_flops) IN ('real','null')),
  nvlink_gen            INTEGER CHECK (typeof(nvlink_gen) IN ('integer','null')),  -- NULL when the part has no NVLink
  nvlink_bw_bytes_s     REAL CHECK (typeof(nvlink_bw_bytes_s) IN ('real','null')),  -- per GPU, both directions added (900e9 on H100 SXM)
  pcie_gen              INTEGER CHECK (typeof(pcie_gen) IN ('integer','null')),
  tdp_w                 REAL CHECK (typeof(tdp_w) IN ('real','null')),
  boost_clock_mhz       REAL CHECK (typeof(boost_clock_mhz) IN ('real','null')),  -- maximum boost clock
  tensor_clock_mhz      REAL CHECK (typeof(tensor_clock_mhz) IN ('real','null')),  -- clock that reproduces the dense tensor peak
  slowdown_temp_c       REAL CHECK (typeof(slowdown_temp_c) IN ('real','null')),
  matmul_bf16_flops     REAL CHECK (typeof(matmul_bf16_flops) IN ('real','null')),  -- best measured sustained BF16 GEMM (MAMF)
  matmul_fp8_flops      REAL CHECK (typeof(matmul_fp8_flops) IN ('real','null')),  -- best measured sustained FP8 GEMM (MAMF)
  context_bytes         INTEGER NOT NULL CHECK (typeof(context_bytes)='integer'),  -- device memory taken by the CUDA context
  source                TEXT NOT NULL,
  note                  TEXT,                  -- conflicts between sources are stated here
  unverified            TEXT                   -- fields recalled but not re-read at the source
);

CREATE TABLE fabric (
  id                    TEXT PRIMARY KEY CHECK (typeof(id)='text'),  -- 'nvlink4', 'ib-ndr', 'pcie5'
  name                  TEXT NOT NULL,
  kind                  TEXT NOT NULL CHECK (kind IN
                          ('nvlink','nvswitch','pcie','infiniband','roce','ethernet','nvl72')),
  scope                 TEXT NOT NULL CHECK (scope IN ('intra','inter')),
  generation            TEXT,
  bw_bytes_s            REAL NOT NULL CHECK (typeof(bw_bytes_s)='real'),  -- per GPU (intra) or per port (inter), ONE direction
  latency_s             REAL NOT NULL CHECK (typeof(latency_s)='real'),  -- one small message, end to end
  source                TEXT NOT NULL,
  note                  TEXT
);

CREATE TABLE node (
  id                    TEXT PRIMARY KEY CHECK (typeof(id)='text'),  -- lower case vendor name: 'standard_nd96asr_v4'
  name                  TEXT NOT NULL,         -- vendor name: 'Standard_ND96asr_v4'
  provider              TEXT NOT NULL,         -- 'Azure', 'AWS', 'GCP', 'on-prem'
  gpu_id                TEXT REFERENCES gpu(id), -- NULL for CPU-only sizes
  gpu_count             INTEGER NOT NULL CHECK (typeof(gpu_count)='integer'),  -- devices the VM sees (1 for a fractional vGPU)
  gpu_fraction          REAL NOT NULL DEFAULT 1 CHECK (typeof(gpu_fraction)='real'),  -- share of each physical GPU (1/6 on NV6ads_A10_v5)
  gpu_memory_bytes      INTEGER CHECK (typeof(gpu_memory_bytes) IN ('integer','null')),  -- per visible device, when not the SKU's (4 GB vGPU)
  intra_fabric_id       TEXT REFERENCES fabric(id), -- how the node's GPUs talk to each other
  inter_fabric_id       TEXT REFERENCES fabric(id), -- scale-out network
  nic_count             INTEGER CHECK (typeof(nic_count) IN ('integer','null')),  -- scale-out NICs per node
  nic_bw_bytes_s        REAL CHECK (typeof(nic_bw_bytes_s) IN ('real','null')),  -- per NIC, one direction
  rail_optimized        INTEGER CHECK (typeof(rail_optimized) IN ('integer','null')),  -- 1 when NIC i of every node shares one leaf
  vcpus                 INTEGER NOT NULL CHECK (typeof(vcpus)='integer'),
  cpu                   TEXT,
  cpu_fp32_flops        REAL CHECK (typeof(cpu_fp32_flops) IN ('real','null')),  -- whole-VM vector FP32 peak (for CPU-vs-GPU questions)
  ram_bytes             INTEGER CHECK (typeof(ram_bytes) IN ('integer','null')),
  price_per_hour        REAL CHECK (typeof(price_per_hour) IN ('real','null')),  -- NULL when no price was found
  currency              TEXT,
  price_region          TEXT,
  price_date            TEXT,                  -- 'YYYY-MM-DD' or a description of the snapshot
  source                TEXT NOT NULL,
  note                  TEXT
);

CREATE TABLE model (
  id                    TEXT PRIMARY KEY CHECK (typeof(id)='text'),  -- 'llama-2-7b'
  name                  TEXT NOT NULL,         -- 'Llama-2 7B'
  family                TEXT NOT NULL,         -- 'llama-2', 'gpt-3', 'megatron-gpt'
  arch                  TEXT NOT NULL CHECK (arch IN ('decoder','encoder','encoder-decoder')),
  params                REAL NOT NULL CHECK (typeof(params)='real'),  -- the published parameter count
  layers                INTEGER NOT NULL CHECK (typeof(layers)='integer' AND layers > 0),
  hidden                INTEGER NOT NULL CHECK (typeof(hidden)='integer' AND hidden > 0),
  heads                 INTEGER NOT NULL CHECK (typeof(heads)='integer' AND heads > 0),
  kv_heads              INTEGER NOT NULL CHECK (typeof(kv_heads)='integer' AND kv_heads > 0),  -- = heads without GQA/MQA
  head_dim              INTEGER NOT NULL CHECK (typeof(head_dim)='integer' AND head_dim > 0),
  ffn_hidden            INTEGER NOT NULL CHECK (typeof(ffn_hidden)='integer' AND ffn_hidden > 0),
  ffn_type              TEXT NOT NULL CHECK (ffn_type IN ('gelu','swiglu','relu','geglu')),
  vocab                 INTEGER NOT NULL CHECK (typeof(vocab)='integer' AND vocab > 0),  -- as trained (padded where the run padded)
  seq_len               INTEGER NOT NULL CHECK (typeof(seq_len)='integer' AND seq_len > 0),  -- training context length
  max_seq_len           INTEGER CHECK (typeof(max_seq_len) IN ('integer','null')),  -- longest supported context (serving)
  tied_embeddings       INTEGER NOT NULL CHECK (typeof(tied_embeddings)='integer' AND tied_embeddings IN (0,1)),
  position              TEXT NOT NULL CHECK (position IN ('learned','rope','alibi','relative')),
  norm                  TEXT NOT NULL CHECK (norm IN ('layernorm','rmsnorm')),
  linear_bias           INTEGER NOT NULL CHECK (typeof(linear_bias)='integer' AND linear_bias IN (0,1)),
  experts               INTEGER NOT NULL DEFAULT 1 CHECK (typeof(experts)='integer' AND experts > 0),
  top_k                 INTEGER NOT NULL DEFAULT 1 CHECK (typeof(top_k)='integer' AND top_k > 0),
  source                TEXT NOT NULL,
  note                  TEXT
);

-- Other names a row answers to.  Lookups are case-insensitive and ignore
-- spaces, '-', '_' and '.', so an alias is needed only for a name that is not
-- already a prefix-by-word of the id or display name (for example
-- 'a100-80gb', which would otherwise be ambiguous between SXM4 and PCIe).
CREATE TABLE alias (
  kind                  TEXT NOT NULL CHECK (kind IN ('gpu','fabric','node','model')),
  alias                 TEXT NOT NULL COLLATE NOCASE CHECK (typeof(alias)='text'),
  target                TEXT NOT NULL CHECK (typeof(target)='text'),
  PRIMARY KEY (kind, alias)
);

PRAGMA user_version = 1;
