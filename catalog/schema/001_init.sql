-- gpuplan catalog schema, version 1.
--
-- Units are SI and explicit in every column name: bytes, bytes_s (bytes per
-- second), flops (FLOP/s, dense, no 2:4 sparsity), w (watts), mhz, s
-- (seconds).  A NULL numeric column means "not published / not found"; it is
-- never a guess.  Every row carries the source it was taken from.

CREATE TABLE gpu (
  id                    TEXT PRIMARY KEY,      -- canonical id, lower case: 'h100-sxm5-80gb'
  name                  TEXT NOT NULL,         -- display name: 'H100 SXM5 80GB'
  vendor                TEXT NOT NULL DEFAULT 'NVIDIA',
  architecture          TEXT NOT NULL,         -- 'Hopper'
  chip                  TEXT,                  -- 'GH100'
  compute_capability    TEXT,                  -- '9.0'
  form_factor           TEXT,                  -- 'SXM5', 'PCIe'
  sm_count              INTEGER,
  cuda_cores            INTEGER,
  tensor_cores          INTEGER,
  memory_gb             REAL NOT NULL,         -- the marketed figure, as the vendor writes it (80, 141)
  memory_bytes          INTEGER NOT NULL,      -- device memory in bytes (marketed HBM "GB" are GiB of DRAM)
  memory_type           TEXT,                  -- 'HBM3'
  mem_bw_bytes_s        REAL NOT NULL,         -- peak DRAM bandwidth, decimal (3.35e12)
  l2_bytes              INTEGER,
  fp64_flops            REAL,
  fp64_tensor_flops     REAL,
  fp32_flops            REAL,
  tf32_flops            REAL,                  -- dense tensor-core figures from here on
  bf16_flops            REAL,
  fp16_flops            REAL,
  fp8_flops             REAL,
  int8_ops              REAL,
  fp4_flops             REAL,
  nvlink_gen            INTEGER,               -- NULL when the part has no NVLink
  nvlink_bw_bytes_s     REAL,                  -- per GPU, both directions added (900e9 on H100 SXM)
  pcie_gen              INTEGER,
  tdp_w                 REAL,
  boost_clock_mhz       REAL,                  -- maximum boost clock
  tensor_clock_mhz      REAL,                  -- clock that reproduces the dense tensor peak
  slowdown_temp_c       REAL,
  matmul_bf16_flops     REAL,                  -- best measured sustained BF16 GEMM (MAMF)
  matmul_fp8_flops      REAL,                  -- best measured sustained FP8 GEMM (MAMF)
  context_bytes         INTEGER NOT NULL,      -- device memory taken by the CUDA context
  source                TEXT NOT NULL,
  note                  TEXT,                  -- conflicts between sources are stated here
  unverified            TEXT                   -- fields recalled but not re-read at the source
);

CREATE TABLE fabric (
  id                    TEXT PRIMARY KEY,      -- 'nvlink4', 'ib-ndr', 'pcie5'
  name                  TEXT NOT NULL,
  kind                  TEXT NOT NULL CHECK (kind IN
                          ('nvlink','nvswitch','pcie','infiniband','roce','ethernet','nvl72')),
  scope                 TEXT NOT NULL CHECK (scope IN ('intra','inter')),
  generation            TEXT,
  bw_bytes_s            REAL NOT NULL,         -- per GPU (intra) or per port (inter), ONE direction
  latency_s             REAL NOT NULL,         -- one small message, end to end
  source                TEXT NOT NULL,
  note                  TEXT
);

CREATE TABLE node (
  id                    TEXT PRIMARY KEY,      -- lower case vendor name: 'standard_nd96asr_v4'
  name                  TEXT NOT NULL,         -- vendor name: 'Standard_ND96asr_v4'
  provider              TEXT NOT NULL,         -- 'Azure', 'AWS', 'GCP', 'on-prem'
  gpu_id                TEXT REFERENCES gpu(id), -- NULL for CPU-only sizes
  gpu_count             INTEGER NOT NULL,      -- devices the VM sees (1 for a fractional vGPU)
  gpu_fraction          REAL NOT NULL DEFAULT 1, -- share of each physical GPU (1/6 on NV6ads_A10_v5)
  gpu_memory_bytes      INTEGER,               -- per visible device, when not the SKU's (4 GB vGPU)
  intra_fabric_id       TEXT REFERENCES fabric(id), -- how the node's GPUs talk to each other
  inter_fabric_id       TEXT REFERENCES fabric(id), -- scale-out network
  nic_count             INTEGER,               -- scale-out NICs per node
  nic_bw_bytes_s        REAL,                  -- per NIC, one direction
  rail_optimized        INTEGER,               -- 1 when NIC i of every node shares one leaf
  vcpus                 INTEGER NOT NULL,
  cpu                   TEXT,
  cpu_fp32_flops        REAL,                  -- whole-VM vector FP32 peak (for CPU-vs-GPU questions)
  ram_bytes             INTEGER,
  price_per_hour        REAL,                  -- NULL when no price was found
  currency              TEXT,
  price_region          TEXT,
  price_date            TEXT,                  -- 'YYYY-MM-DD' or a description of the snapshot
  source                TEXT NOT NULL,
  note                  TEXT
);

CREATE TABLE model (
  id                    TEXT PRIMARY KEY,      -- 'llama-2-7b'
  name                  TEXT NOT NULL,         -- 'Llama-2 7B'
  family                TEXT NOT NULL,         -- 'llama-2', 'gpt-3', 'megatron-gpt'
  arch                  TEXT NOT NULL CHECK (arch IN ('decoder','encoder','encoder-decoder')),
  params                REAL NOT NULL,         -- the published parameter count
  layers                INTEGER NOT NULL CHECK (layers > 0),
  hidden                INTEGER NOT NULL CHECK (hidden > 0),
  heads                 INTEGER NOT NULL CHECK (heads > 0),
  kv_heads              INTEGER NOT NULL CHECK (kv_heads > 0),  -- = heads without GQA/MQA
  head_dim              INTEGER NOT NULL CHECK (head_dim > 0),
  ffn_hidden            INTEGER NOT NULL CHECK (ffn_hidden > 0),
  ffn_type              TEXT NOT NULL CHECK (ffn_type IN ('gelu','swiglu','relu','geglu')),
  vocab                 INTEGER NOT NULL CHECK (vocab > 0),      -- as trained (padded where the run padded)
  seq_len               INTEGER NOT NULL CHECK (seq_len > 0),    -- training context length
  max_seq_len           INTEGER,               -- longest supported context (serving)
  tied_embeddings       INTEGER NOT NULL CHECK (tied_embeddings IN (0,1)),
  position              TEXT NOT NULL CHECK (position IN ('learned','rope','alibi','relative')),
  norm                  TEXT NOT NULL CHECK (norm IN ('layernorm','rmsnorm')),
  linear_bias           INTEGER NOT NULL CHECK (linear_bias IN (0,1)),
  experts               INTEGER NOT NULL DEFAULT 1 CHECK (experts > 0),
  top_k                 INTEGER NOT NULL DEFAULT 1 CHECK (top_k > 0),
  source                TEXT NOT NULL,
  note                  TEXT
);

-- Other names a row answers to.  Lookups are case-insensitive and ignore
-- spaces, '-', '_' and '.', so an alias is needed only for a name that is not
-- already a prefix-by-word of the id or display name (for example
-- 'a100-80gb', which would otherwise be ambiguous between SXM4 and PCIe).
CREATE TABLE alias (
  kind                  TEXT NOT NULL CHECK (kind IN ('gpu','fabric','node','model')),
  alias                 TEXT NOT NULL COLLATE NOCASE,
  target                TEXT NOT NULL,
  PRIMARY KEY (kind, alias)
);

PRAGMA user_version = 1;
