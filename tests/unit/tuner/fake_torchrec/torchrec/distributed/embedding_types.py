"""Test fake of torchrec's EmbeddingComputeKernel (its members in torchrec 1.9.2 up to the SSD ones)."""
import enum


class EmbeddingComputeKernel(enum.Enum):
    DENSE = "dense"
    FUSED = "fused"
    FUSED_UVM = "fused_uvm"
    FUSED_UVM_CACHING = "fused_uvm_caching"
    QUANT = "quant"
    QUANT_UVM = "quant_uvm"
    QUANT_UVM_CACHING = "quant_uvm_caching"
    KEY_VALUE = "key_value"
    CUSTOMIZED_KERNEL = "customized_kernel"
    SSD_VIRTUAL_TABLE = "ssd_virtual_table"
    DRAM_VIRTUAL_TABLE = "dram_virtual_table"
    DRAM_SSD_VIRTUAL_TABLE = "dram_ssd_virtual_table"
