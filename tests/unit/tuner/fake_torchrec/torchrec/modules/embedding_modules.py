"""Stand-in for EmbeddingBagCollection (torchrec/modules/embedding_modules.py, pytorch/torchrec
a48cef79ebc3): its __init__ and forward as there (one nn.EmbeddingBag per config in the
`embedding_bags` ModuleDict keyed by the config name, include_last_offset=True, configs kept in
`_embedding_bag_configs`; forward calls each bag once per feature with keywords)."""
import torch
from torch import nn

from torchrec.modules.embedding_configs import DataType, pooling_type_to_str
from torchrec.sparse.jagged_tensor import KeyedTensor


class EmbeddingBagCollection(nn.Module):
    def __init__(self, tables, is_weighted=False, device=None):
        super().__init__()
        self._is_weighted = is_weighted
        self.embedding_bags = nn.ModuleDict()
        self._embedding_bag_configs = tables
        self._lengths_per_embedding = []
        names = set()
        for cfg in tables:
            if cfg.name in names:
                raise ValueError("Duplicate table name %s" % cfg.name)
            names.add(cfg.name)
            dtype = torch.float32 if cfg.data_type == DataType.FP32 else torch.float16
            self.embedding_bags[cfg.name] = nn.EmbeddingBag(
                num_embeddings=cfg.num_embeddings, embedding_dim=cfg.embedding_dim,
                mode=pooling_type_to_str(cfg.pooling), device=device, include_last_offset=True, dtype=dtype)
            if not cfg.feature_names:
                cfg.feature_names = [cfg.name]
            self._lengths_per_embedding.extend(len(cfg.feature_names) * [cfg.embedding_dim])
        self._embedding_names = [f for cfg in tables for f in cfg.feature_names]
        self._feature_names = [cfg.feature_names for cfg in tables]

    def forward(self, features):
        pooled = []
        feature_dict = features.to_dict()
        for i, embedding_bag in enumerate(self.embedding_bags.values()):
            for feature_name in self._feature_names[i]:
                f = feature_dict[feature_name]
                res = embedding_bag(input=f.values(), offsets=f.offsets(),
                                    per_sample_weights=f.weights() if self._is_weighted else None).float()
                pooled.append(res)
        return KeyedTensor(keys=self._embedding_names, values=torch.cat(pooled, dim=1),
                           length_per_key=self._lengths_per_embedding)

    def embedding_bag_configs(self):
        return self._embedding_bag_configs


class EmbeddingCollection(nn.Module):
    """EmbeddingCollection's __init__ as there (one nn.Embedding per config in the `embeddings`
    ModuleDict keyed by the config name, configs in `_embedding_configs`) and a forward that
    looks each feature up with keywords, returning {feature: rows}."""

    def __init__(self, tables, device=None, need_indices=False):
        super().__init__()
        self.embeddings = nn.ModuleDict()
        self._embedding_configs = tables
        names = set()
        for cfg in tables:
            if cfg.name in names:
                raise ValueError("Duplicate table name %s" % cfg.name)
            names.add(cfg.name)
            dtype = torch.float32 if cfg.data_type == DataType.FP32 else torch.float16
            self.embeddings[cfg.name] = nn.Embedding(num_embeddings=cfg.num_embeddings,
                                                     embedding_dim=cfg.embedding_dim, device=device, dtype=dtype)
            if not cfg.feature_names:
                cfg.feature_names = [cfg.name]

    def forward(self, features):
        feature_dict = features.to_dict()
        out = {}
        for cfg, emb in zip(self._embedding_configs, self.embeddings.values()):
            for f in cfg.feature_names:
                out[f] = emb(input=feature_dict[f].values())
        return out
