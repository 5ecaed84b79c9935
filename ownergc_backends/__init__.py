"""Backends for ownergc: memory (in-process), kube (a real apiserver), cri (containerd)."""
