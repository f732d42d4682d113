"""Stand-in for the parts of torchrec/sparse/jagged_tensor.py (pytorch/torchrec a48cef79ebc3)
that EmbeddingBagCollection.forward uses: KeyedJaggedTensor.to_dict() -> JaggedTensor with
values() / offsets() / weights() (offsets with a leading 0: B + 1 entries a feature)."""
import torch


class JaggedTensor(object):
    def __init__(self, values, offsets, weights=None):
        self._values, self._offsets, self._weights = values, offsets, weights

    def values(self):
        return self._values

    def offsets(self):
        return self._offsets

    def weights(self):
        return self._weights


class KeyedJaggedTensor(object):
    """keys, values of every feature one after another, lengths: B per feature."""

    def __init__(self, keys, values, lengths, weights=None):
        self._keys, self._values, self._lengths, self._weights = list(keys), values, lengths, weights

    def keys(self):
        return self._keys

    # stride, stride_per_key, variable_stride_per_key, length_per_key and length_per_key_or_none as
    # torchrec 1.9.2's KeyedJaggedTensor has them (torchrec/sparse/jagged_tensor.py): B, B per key,
    # False (one batch size for every key), the ids of each key, and None (nothing cached here).
    def stride(self):
        return self._lengths.numel() // len(self._keys)

    def stride_per_key(self):
        return [self.stride()] * len(self._keys)

    def variable_stride_per_key(self):
        return False

    def length_per_key(self):
        b = self.stride()
        return [int(self._lengths[i * b:(i + 1) * b].sum()) for i in range(len(self._keys))]

    def length_per_key_or_none(self):
        return None

    def to_dict(self):
        out = {}
        b = self._lengths.numel() // len(self._keys)
        start = 0
        for i, k in enumerate(self._keys):
            lens = self._lengths[i * b:(i + 1) * b]
            n = int(lens.sum())
            offsets = torch.zeros(b + 1, dtype=torch.int64)
            offsets[1:] = torch.cumsum(lens, 0)
            w = self._weights[start:start + n] if self._weights is not None else None
            out[k] = JaggedTensor(self._values[start:start + n], offsets, w)
            start += n
        return out


class KeyedTensor(object):
    def __init__(self, keys, values, length_per_key):
        self._keys, self._values, self._length_per_key = keys, values, length_per_key

    def keys(self):
        return self._keys

    def values(self):
        return self._values
