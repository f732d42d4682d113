"""Test fake of torchrec's ParameterConstraints: keeps its keyword arguments."""


class ParameterConstraints(object):
    def __init__(self, **kwargs):
        self.kwargs = kwargs
        for k, v in kwargs.items():
            setattr(self, k, v)
