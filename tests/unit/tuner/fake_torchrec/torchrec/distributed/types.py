"""Stand-in for torchrec/distributed/types.py (pytorch/torchrec a48cef79ebc3, October 2025):
CacheStatistics, CacheParams and KeyValueParams (torchrec 1.9.2, line 720) with the real fields;
a wrong keyword fails as it would there."""
import abc
from dataclasses import dataclass
from typing import Any, Optional


class CacheStatistics(abc.ABC):
    def stable_fingerprint(self):
        """torchrec 1.9.2 (torchrec/distributed/types.py line 618): subclasses must override it."""
        raise RuntimeError("%s must override stable_fingerprint() before it can be used in a persistent planner cache key"
                           % type(self).__qualname__)

    @property
    @abc.abstractmethod
    def expected_lookups(self) -> float:
        """Number of expected cache lookups per training step (distinct values in a global batch)."""

    @abc.abstractmethod
    def expected_miss_rate(self, clf: float) -> float:
        """Expected cache lookup miss rate for a given cache load factor (1.0 at 0, 0 at 1.0)."""

    @property
    @abc.abstractmethod
    def cacheability(self) -> float:
        """0: very cacheable, 1: very difficult to cache."""


@dataclass
class CacheParams:
    algorithm: Optional[Any] = None          # fbgemm_gpu CacheAlgorithm
    load_factor: Optional[float] = None
    reserved_memory: Optional[float] = None
    precision: Optional[Any] = None          # DataType
    prefetch_pipeline: Optional[bool] = None
    stats: Optional[CacheStatistics] = None
    multipass_prefetch_config: Optional[Any] = None


@dataclass
class KeyValueParams:
    ssd_storage_directory: Optional[str] = None
    ssd_rocksdb_write_buffer_size: Optional[int] = None
    ssd_rocksdb_shards: Optional[int] = None
    gather_ssd_cache_stats: Optional[bool] = None
    stats_reporter_config: Optional[Any] = None
    use_passed_in_path: bool = True
    l2_cache_size: Optional[int] = None  # size in GB
    max_l1_cache_size: Optional[int] = None  # size in MB
    enable_async_update: Optional[bool] = None
    bulk_init_chunk_size: Optional[int] = None
    lazy_bulk_init_enabled: Optional[bool] = None
    enable_raw_embedding_streaming: Optional[bool] = None
    res_store_shards: Optional[int] = None
    kvzch_tbe_config: Optional[Any] = None
    load_ckpt_without_opt: bool = False
    ps_hosts: Optional[Any] = None
    ps_client_thread_num: Optional[int] = None
    ps_max_key_per_request: Optional[int] = None
    ps_max_local_index_length: Optional[int] = None
