/*
 * smi_fields.h: the fields of `nvidia-smi --query-gpu` and
 * `--query-compute-apps` that smi answers, once: cmd_devices.c fills them,
 * kinds_devices.c describes them (rows[].<field>).  Names and units are
 * nvidia-smi's (nvidia-smi --help-query-gpu); a field a card or driver does
 * not report is null ("[N/A]").  Not installed.
 *
 * F(name, unit, type, help): type is a gpuplan_value_type.
 */
#ifndef GPUPLAN_SMI_FIELDS_H
#define GPUPLAN_SMI_FIELDS_H

#define GPUPLAN__SMI_S GPUPLAN_VALUE_STRING
#define GPUPLAN__SMI_I GPUPLAN_VALUE_INT
#define GPUPLAN__SMI_R GPUPLAN_VALUE_REAL

#define GPUPLAN__SMI_GPU_FIELDS(F)                                                                       \
  F("timestamp", "", GPUPLAN__SMI_S, "when the row was read, YYYY/MM/DD HH:MM:SS.mmm")                   \
  F("driver_version", "", GPUPLAN__SMI_S, "the driver's version")                                       \
  F("count", "", GPUPLAN__SMI_I, "GPUs the driver sees")                                                 \
  F("index", "", GPUPLAN__SMI_I, "the GPU's index")                                                      \
  F("name", "", GPUPLAN__SMI_S, "the driver's name for the GPU")                                         \
  F("serial", "", GPUPLAN__SMI_S, "the board's serial number")                                           \
  F("uuid", "", GPUPLAN__SMI_S, "GPU-... (stable across reboots)")                                      \
  F("pci.bus_id", "", GPUPLAN__SMI_S, "domain:bus:device.function")                                      \
  F("pci.domain", "", GPUPLAN__SMI_S, "PCI domain, hex")                                                 \
  F("pci.bus", "", GPUPLAN__SMI_S, "PCI bus, hex")                                                       \
  F("pci.device", "", GPUPLAN__SMI_S, "PCI device, hex")                                                 \
  F("pci.device_id", "", GPUPLAN__SMI_S, "PCI vendor and device id, hex")                               \
  F("pcie.link.gen.current", "", GPUPLAN__SMI_I, "PCIe generation now (idle links drop to 1)")           \
  F("pcie.link.gen.max", "", GPUPLAN__SMI_I, "PCIe generation the link can run")                         \
  F("pcie.link.width.current", "", GPUPLAN__SMI_I, "PCIe lanes now")                                     \
  F("pcie.link.width.max", "", GPUPLAN__SMI_I, "PCIe lanes at most")                                     \
  F("display_mode", "", GPUPLAN__SMI_S, "Enabled or Disabled")                                           \
  F("display_active", "", GPUPLAN__SMI_S, "Enabled or Disabled")                                         \
  F("persistence_mode", "", GPUPLAN__SMI_S, "Enabled or Disabled")                                       \
  F("vbios_version", "", GPUPLAN__SMI_S, "the VBIOS version")                                            \
  F("fan.speed", "%", GPUPLAN__SMI_I, "fan speed (null: passively cooled)")                              \
  F("pstate", "", GPUPLAN__SMI_S, "performance state, P0 (full speed) to P12")                          \
  F("memory.total", "MiB", GPUPLAN__SMI_I, "device memory")                                              \
  F("memory.reserved", "MiB", GPUPLAN__SMI_I, "memory the driver keeps")                                 \
  F("memory.used", "MiB", GPUPLAN__SMI_I, "memory handed out (PyTorch's cache counts in full)")         \
  F("memory.free", "MiB", GPUPLAN__SMI_I, "memory not handed out")                                       \
  F("compute_mode", "", GPUPLAN__SMI_S, "Default, Exclusive_Process, Prohibited")                       \
  F("compute_cap", "", GPUPLAN__SMI_S, "compute capability, X.Y")                                        \
  F("utilization.gpu", "%", GPUPLAN__SMI_I, "time a kernel was running")                                 \
  F("utilization.memory", "%", GPUPLAN__SMI_I, "time device memory was read or written")                 \
  F("utilization.encoder", "%", GPUPLAN__SMI_I, "video encoder")                                         \
  F("utilization.decoder", "%", GPUPLAN__SMI_I, "video decoder")                                         \
  F("ecc.mode.current", "", GPUPLAN__SMI_S, "Enabled or Disabled (null: no ECC)")                        \
  F("ecc.errors.corrected.volatile.total", "", GPUPLAN__SMI_I, "corrected ECC errors since the reset")   \
  F("ecc.errors.uncorrected.volatile.total", "", GPUPLAN__SMI_I, "uncorrected ECC errors since the reset") \
  F("ecc.errors.corrected.aggregate.total", "", GPUPLAN__SMI_I, "corrected ECC errors, lifetime")        \
  F("ecc.errors.uncorrected.aggregate.total", "", GPUPLAN__SMI_I, "uncorrected ECC errors, lifetime")    \
  F("retired_pages.single_bit_ecc.count", "", GPUPLAN__SMI_I, "pages retired for single-bit errors")     \
  F("retired_pages.double_bit.count", "", GPUPLAN__SMI_I, "pages retired for double-bit errors")         \
  F("retired_pages.pending", "", GPUPLAN__SMI_S, "Yes: a retirement waits for a reset")                  \
  F("remapped_rows.correctable", "", GPUPLAN__SMI_I, "rows remapped for correctable errors")             \
  F("remapped_rows.uncorrectable", "", GPUPLAN__SMI_I, "rows remapped for uncorrectable errors")         \
  F("remapped_rows.pending", "", GPUPLAN__SMI_S, "Yes: a remapping waits for a reset")                   \
  F("remapped_rows.failure", "", GPUPLAN__SMI_S, "Yes: a remapping failed (replace the GPU)")            \
  F("temperature.gpu", "", GPUPLAN__SMI_I, "core temperature, C")                                        \
  F("temperature.memory", "", GPUPLAN__SMI_I, "HBM temperature, C (null on GDDR cards)")                 \
  F("power.draw", "W", GPUPLAN__SMI_R, "power now")                                                      \
  F("power.limit", "W", GPUPLAN__SMI_R, "the power limit")                                               \
  F("enforced.power.limit", "W", GPUPLAN__SMI_R, "the power limit enforced")                             \
  F("clocks.gr", "MHz", GPUPLAN__SMI_I, "graphics clock")                                                \
  F("clocks.sm", "MHz", GPUPLAN__SMI_I, "SM clock")                                                      \
  F("clocks.mem", "MHz", GPUPLAN__SMI_I, "memory clock")                                                 \
  F("clocks.max.gr", "MHz", GPUPLAN__SMI_I, "highest graphics clock")                                    \
  F("clocks.max.graphics", "MHz", GPUPLAN__SMI_I, "highest graphics clock")                              \
  F("clocks.max.sm", "MHz", GPUPLAN__SMI_I, "highest SM clock")                                          \
  F("clocks.max.mem", "MHz", GPUPLAN__SMI_I, "highest memory clock")                                     \
  F("clocks.max.memory", "MHz", GPUPLAN__SMI_I, "highest memory clock")                                  \
  F("clocks_throttle_reasons.active", "", GPUPLAN__SMI_S, "the reasons the clocks are low, a bit mask")  \
  F("clocks_event_reasons.active", "", GPUPLAN__SMI_S, "the reasons the clocks are low, a bit mask")     \
  F("clocks_throttle_reasons.gpu_idle", "", GPUPLAN__SMI_S, "Active or Not Active")                      \
  F("clocks_throttle_reasons.sw_power_cap", "", GPUPLAN__SMI_S, "Active or Not Active")                  \
  F("clocks_throttle_reasons.hw_slowdown", "", GPUPLAN__SMI_S, "Active or Not Active")                   \
  F("clocks_throttle_reasons.sw_thermal_slowdown", "", GPUPLAN__SMI_S, "Active or Not Active")           \
  F("clocks_throttle_reasons.hw_thermal_slowdown", "", GPUPLAN__SMI_S, "Active or Not Active")           \
  F("mig.mode.current", "", GPUPLAN__SMI_S, "Enabled or Disabled (null: no MIG)")                        \
  F("gpuplan.sku", "", GPUPLAN__SMI_S, "the catalog SKU the GPU matches")

#define GPUPLAN__SMI_APP_FIELDS(F)                                                                       \
  F("gpu_name", "", GPUPLAN__SMI_S, "the GPU's name")                                                    \
  F("gpu_bus_id", "", GPUPLAN__SMI_S, "the GPU's PCI bus id")                                            \
  F("gpu_serial", "", GPUPLAN__SMI_S, "the GPU's serial number")                                         \
  F("gpu_uuid", "", GPUPLAN__SMI_S, "the GPU's UUID")                                                    \
  F("pid", "", GPUPLAN__SMI_I, "the process id")                                                         \
  F("process_name", "", GPUPLAN__SMI_S, "the process name")                                              \
  F("used_gpu_memory", "MiB", GPUPLAN__SMI_I, "device memory the process holds")                         \
  F("used_memory", "MiB", GPUPLAN__SMI_I, "device memory the process holds")

#endif /* GPUPLAN_SMI_FIELDS_H */
