"""Test fake of torchrec's CacheParams: keeps its keyword arguments."""


class CacheParams(object):
    def __init__(self, algorithm=None, load_factor=None, **kwargs):
        self.algorithm = algorithm
        self.load_factor = load_factor
        self.kwargs = kwargs
