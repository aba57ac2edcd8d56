"""Cluster inventory: sources that yield Kubernetes-shaped nodes and pods, read into records for sync."""
