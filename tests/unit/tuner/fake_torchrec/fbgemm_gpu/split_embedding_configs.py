"""Test fake of fbgemm_gpu's EmbOptimType (fbgemm_gpu/split_embedding_configs.py; members as
in FBGEMM's sources of October 2025, the ones edo may write)."""
import enum


class EmbOptimType(enum.Enum):
    SGD = "sgd"
    EXACT_SGD = "exact_sgd"
    ADAM = "adam"
    EXACT_ADAGRAD = "exact_adagrad"
    EXACT_ROWWISE_ADAGRAD = "exact_row_wise_adagrad"
    ROWWISE_ADAGRAD = "row_wise_adagrad"
