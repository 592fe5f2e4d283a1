#!/usr/bin/python3
"""Compare `gpuplan catalog gpus --json` and `catalog nodes --json` with the
reference data they were built from (data/reference/gpus.csv, vms.csv).

Independent truth: the CSV cells are parsed here, with no code shared with
the catalog.  Where a cell holds several figures (sources conflict), the
catalog must hold one of them.  The data is in the repository: absent fails.
"""
import csv
import json
import os
import re
import subprocess
import sys

GPU_IDS = {
    "V100 SXM2 32GB": "v100-sxm2-32gb",
    "A100 SXM4 40GB": "a100-sxm4-40gb",
    "A100 SXM4 80GB": "a100-sxm4-80gb",
    "A100 PCIe 80GB": "a100-pcie-80gb",
    "H100 SXM5 80GB": "h100-sxm5-80gb",
    "H100 PCIe 80GB": "h100-pcie-80gb",
    "H100 NVL 94GB": "h100-nvl-94gb",
    "H200 SXM 141GB": "h200-sxm-141gb",
    "B200 (HGX/DGX B200)": "b200",
    "GB200 (per Blackwell GPU, NVL72)": "gb200",
    "B100 (HGX B100)": "b100",
    "T4 16GB": "t4",
    "A10 24GB": "a10",
    "A10G 24GB (AWS G5)": "a10g",
    "L4 24GB": "l4",
    "L40S 48GB": "l40s",
    "GeForce RTX 4090 24GB (consumer reference)": "rtx-4090",
}

# csv column -> (catalog field, scale from csv unit to catalog unit)
GPU_FIELDS = {
    "sm_count": ("sm_count", 1),
    "cuda_cores": ("cuda_cores", 1),
    "tensor_cores": ("tensor_cores", 1),
    "memory_marketed": ("memory_gb", 1),
    "mem_bw_gbs": ("mem_bw_bytes_s", 1e9),
    "l2_mb": ("l2_bytes", 1048576),
    "fp64_tflops": ("fp64_flops", 1e12),
    "fp32_tflops": ("fp32_flops", 1e12),
    "tf32_dense_tflops": ("tf32_flops", 1e12),
    "bf16_dense_tflops": ("bf16_flops", 1e12),
    "fp16_dense_tflops": ("fp16_flops", 1e12),
    "fp8_dense_tflops": ("fp8_flops", 1e12),
    "int8_dense_tops": ("int8_ops", 1e12),
    "fp4_dense_tflops": ("fp4_flops", 1e12),
    "nvlink_bw_gbs_bidir": ("nvlink_bw_bytes_s", 1e9),
    "tdp_w": ("tdp_w", 1),
    "boost_clock_mhz": ("boost_clock_mhz", 1),
}

NUM = re.compile(r"(?<![\w.])(\d+(?:,\d{3})*(?:\.\d+)?)")


def numbers(cell):
    return [float(x.replace(",", "")) for x in NUM.findall(cell)]


def run(exe, *args):
    """The records of a catalog list: the rows of its gpuplan.catalog/1 document."""
    out = subprocess.run([exe, *args], check=True, capture_output=True, text=True)
    doc = json.loads(out.stdout)
    assert doc["schema"] == "gpuplan.catalog/1", doc.get("schema")
    return doc["rows"]


def main():
    exe, ref = sys.argv[1], sys.argv[2]
    if not os.path.exists(os.path.join(ref, "gpus.csv")):
        print("%s/gpus.csv not found (vendored in data/reference)" % ref)
        return 1
    gpus = {g["id"]: g for g in run(exe, "catalog", "gpus", "--json")}
    failures, checked = [], 0
    with open(os.path.join(ref, "gpus.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 17, len(rows)
    for row in rows:
        gid = GPU_IDS[row["sku"]]
        g = gpus.get(gid)
        if g is None:
            failures.append(f"{row['sku']}: missing from the catalog ({gid})")
            continue
        if row["compute_capability"] and g["compute_capability"] != row["compute_capability"]:
            failures.append(f"{gid}: compute_capability {g['compute_capability']} "
                            f"!= {row['compute_capability']}")
        for col, (field, scale) in GPU_FIELDS.items():
            cell = row[col].strip()
            vals = numbers(cell)
            if not vals or g[field] is None:
                continue
            checked += 1
            # the catalog value must be one of the figures in the cell
            if not any(abs(g[field] - v * scale) <= 1e-6 * v * scale + 1e-9 for v in vals):
                failures.append(f"{gid}: {field}={g[field]} not among {vals} x {scale} "
                                f"(gpus.csv {col}={cell!r})")
        if not g["source"]:
            failures.append(f"{gid}: no source")

    nodes = {n["name"]: n for n in run(exe, "catalog", "nodes", "--json")}
    with open(os.path.join(ref, "vms.csv"), newline="") as f:
        for row in csv.DictReader(f):
            name = row["vm_sku"].split(" ")[0]
            if "/" in name or name not in nodes:
                continue
            n = nodes[name]
            checked += 1
            gpus_cell = numbers(row["gpus_per_vm"])
            if gpus_cell and n["gpu_count"] != int(gpus_cell[0]):
                failures.append(f"{name}: gpu_count {n['gpu_count']} != {gpus_cell[0]}")
            price = numbers(row["price_usd_per_hr_payg"])
            if price and n["price_per_hour"] != price[0]:
                failures.append(f"{name}: price {n['price_per_hour']} != {price[0]}")
            vcpus = numbers(row["vcpus"])
            if vcpus and int(vcpus[0]) != n["vcpus"]:
                failures.append(f"{name}: vcpus {n['vcpus']} != {row['vcpus']}")

    for line in failures:
        print("MISMATCH", line)
    print(f"{checked} figures checked against gpus.csv and vms.csv, "
          f"{len(failures)} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
