"""Stand-in for torchrec/modules/embedding_configs.py (pytorch/torchrec a48cef79ebc3, October
2025): DataType, PoolingType, EmbeddingBagConfig / EmbeddingConfig with the fields edo reads."""
import enum
from dataclasses import dataclass, field
from typing import List, Optional


class DataType(enum.Enum):
    FP32 = "FP32"
    FP16 = "FP16"
    BF16 = "BF16"
    INT64 = "INT64"
    INT32 = "INT32"
    INT8 = "INT8"
    UINT8 = "UINT8"
    INT4 = "INT4"
    INT2 = "INT2"
    # torchrec/types.py at a48cef79: the last member. No FP8: NFP8 maps to FBGEMM's
    # SparseType.NFP8 (data_type_to_sparse_type), not to SparseType.FP8.
    NFP8 = "NFP8"


class PoolingType(enum.Enum):
    SUM = "SUM"
    MEAN = "MEAN"
    NONE = "NONE"


def pooling_type_to_str(pooling_type):
    if pooling_type.value == PoolingType.SUM.value:
        return "sum"
    if pooling_type.value == PoolingType.MEAN.value:
        return "mean"
    raise ValueError("Unsupported pooling type %s" % pooling_type)


@dataclass
class BaseEmbeddingConfig:
    num_embeddings: int
    embedding_dim: int
    name: str = ""
    data_type: DataType = DataType.FP32
    feature_names: List[str] = field(default_factory=list)
    weight_init_max: Optional[float] = None
    weight_init_min: Optional[float] = None
    num_embeddings_post_pruning: Optional[int] = None


@dataclass
class EmbeddingBagConfig(BaseEmbeddingConfig):
    pooling: PoolingType = PoolingType.SUM


@dataclass
class EmbeddingConfig(BaseEmbeddingConfig):
    pass
