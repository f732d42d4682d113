"""Stand-in for ParameterConstraints (torchrec/distributed/planner/types.py, pytorch/torchrec
a48cef79ebc3, October 2025): the real fields and defaults; a wrong keyword fails as it would there."""
from dataclasses import dataclass, field
from typing import Any, List, Optional

POOLING_FACTOR = 1.0  # torchrec/distributed/planner/constants.py


@dataclass
class ParameterConstraints:
    sharding_types: Optional[List[str]] = None
    compute_kernels: Optional[List[str]] = None
    min_partition: Optional[int] = None
    pooling_factors: List[float] = field(default_factory=lambda: [POOLING_FACTOR])
    num_poolings: Optional[List[float]] = None
    batch_sizes: Optional[List[int]] = None
    is_weighted: bool = False
    cache_params: Optional[Any] = None
    enforce_hbm: Optional[bool] = None
    stochastic_rounding: Optional[bool] = None
    bounds_check_mode: Optional[Any] = None
    feature_names: Optional[List[str]] = None
    output_dtype: Optional[Any] = None
    device_group: Optional[str] = None
    key_value_params: Optional[Any] = None
    use_virtual_table: bool = False
