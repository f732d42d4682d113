"""Test fake of fbgemm_gpu's CacheAlgorithm."""
import enum


class CacheAlgorithm(enum.Enum):
    LRU = 0
    LFU = 1
