"""The PyTorch hooks: what is patched in torch (_patches, entry point _torch_hooks), how tables
are found and named (_naming), counted eagerly (_counting, _wrappers) and inside compiled graphs
(_compiled), optimizer steps (_optim) and a plan applied under edo record (_trial). Sits above
edo.runtime, edo.facts and edo.plan."""
