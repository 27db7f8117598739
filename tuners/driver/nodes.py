"""The files a sweep's trials read, checked on every node of a Ray cluster before the sweep starts.

A task's path options (``features``' ``path``, ...) reach the workers as the absolute paths the driver
resolved and checked on its own machine, and each trial opens them on whichever node runs it. A path
that exists only where the driver runs (its ``/tmp``, a local disk, a home folder no other node mounts)
would fail every trial placed elsewhere, each retried and then counted as failed, until the budget is
spent on failures. So before a sweep on a cluster touches its storage, one small Ray task per alive
node (no CPU asked, pinned to that node) reports which paths that node cannot see, and the sweep is
refused naming the option, the path and the nodes. Nodes that join later (an autoscaler's) are not
checked; docs/cluster.md says what every node must hold.

This module must stay light: Ray's workers import it to run ``unseen_paths`` (no torch, no lwnas imports).
"""

from __future__ import annotations

import os
from typing import Any

PROBE_TIMEOUT_S = 300.0  # a node starts a Ray worker for the probe: seconds on a busy machine


def unseen_paths(paths: list[str]) -> list[str]:
    """The paths of ``paths`` this process cannot see (run on each node)."""
    return [p for p in paths if not os.path.exists(p)]


def node_label(node: dict[str, Any]) -> str:
    """A node as ``ray.nodes()`` lists it, for a message: ``hostname (address)``."""
    host, address = node.get("NodeManagerHostname"), node.get("NodeManagerAddress")
    return f"{host} ({address})" if host and host != address else str(address or node.get("NodeID"))


def paths_unseen_on_nodes(
    paths: list[str], timeout_s: float = PROBE_TIMEOUT_S
) -> tuple[dict[str, list[str]], list[str]]:
    """Ask every alive node of the connected Ray cluster which of ``paths`` it cannot see.

    Returns ``({path: [node, ...]}, unanswered)``: the nodes that lack each path, and the nodes whose
    probe did not answer within ``timeout_s`` (or failed), which are not judged.
    """
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    probe = ray.remote(num_cpus=0, max_retries=0)(unseen_paths)
    alive = [n for n in ray.nodes() if n.get("Alive")]
    refs = {
        probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote(
            paths
        ): node_label(n)
        for n in alive
    }
    ready, late = ray.wait(list(refs), num_returns=len(refs), timeout=timeout_s)
    unseen: dict[str, list[str]] = {}
    unanswered = [refs[r] for r in late]
    for ref in ready:
        try:
            missing = ray.get(ref)
        except ray.exceptions.RayError:  # the node died or could not start a worker: it is not judged
            unanswered.append(refs[ref])
            continue
        for path in missing:
            unseen.setdefault(path, []).append(refs[ref])
    for ref in late:
        ray.cancel(ref, force=True)
    return {p: sorted(nodes) for p, nodes in unseen.items()}, sorted(unanswered)
