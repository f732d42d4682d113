"""edo's boot hook, put first on PYTHONPATH by `edo record`.

1. Runs the sitecustomize that this file shadows (the next one on sys.path), so the
   job's own site customisation still happens.
2. Unless EDO_TORCH=0, waits for the job to import torch (a meta-path finder; torch
   itself is never imported here) and then installs edo's PyTorch hooks.
"""

import os
import sys


def _chain():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        import importlib.machinery
        import importlib.util
        rest = []
        seen_self = False
        for p in sys.path:
            ap = os.path.abspath(p or os.getcwd())
            if ap == here:
                seen_self = True
                continue
            if seen_self:
                rest.append(p)
        if not seen_self:
            rest = [p for p in sys.path if os.path.abspath(p or os.getcwd()) != here]
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
        if spec is None or spec.loader is None:
            return
        origin = getattr(spec, "origin", None)
        if origin and os.path.abspath(origin) == os.path.abspath(__file__):
            return
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    except Exception as e:  # the chained file failing must not stop the job
        try:
            sys.stderr.write("edo: the next sitecustomize on sys.path failed: %s: %s\n"
                             % (type(e).__name__, e))
        except Exception:
            pass


def _patch_torch():
    try:
        from edo.hooks import _torch_hooks
        _torch_hooks.patch()
    except Exception as e:
        try:
            sys.stderr.write("edo: cannot instrument torch (%s: %s); the job runs untraced\n"
                             % (type(e).__name__, e))
        except Exception:
            pass


class _TorchImportWatcher(object):
    """Finds nothing itself; when `torch` is about to be imported, it asks the other finders
    for the spec and makes the loader call edo after torch's module code has run."""

    def __init__(self):
        self._busy = False

    def find_spec(self, name, path=None, target=None):
        if name != "torch" or self._busy:
            return None
        self._busy = True
        try:
            import importlib.util
            spec = importlib.util.find_spec(name)
        except Exception:
            spec = None
        finally:
            self._busy = False
        self.remove()
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        orig_exec = loader.exec_module
        try:
            def exec_module(module):
                try:
                    orig_exec(module)
                finally:
                    try:
                        del loader.exec_module   # back to the class's method
                    except AttributeError:
                        pass
                _patch_torch()
            loader.exec_module = exec_module
        except (AttributeError, TypeError):
            # a loader with __slots__: leave it alone, patch when edo is imported instead
            return spec
        return spec

    def remove(self):
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass


def _install():
    if os.environ.get("EDO_TORCH", "1").strip().lower() in ("0", "off", "false", "no"):
        return
    if "torch" in sys.modules:
        _patch_torch()
        return
    sys.meta_path.insert(0, _TorchImportWatcher())


_chain()
_install()
