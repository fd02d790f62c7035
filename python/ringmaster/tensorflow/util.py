"""Helpers Horovod's users and tests import from ``horovod.tensorflow.util``."""
from __future__ import annotations

from typing import Any, Callable, Dict, List

import tensorflow as tf


def _executing_eagerly() -> bool:
    """True outside a graph being built (TF2's eager mode)."""
    return tf.executing_eagerly()


def _make_subgraph(f: Callable) -> Callable:
    return tf.function(f)


def _cache(f: Callable) -> Callable:
    """Memoizes ``f`` per argument tuple (and per graph, outside eager mode)."""
    cache: Dict[Any, Any] = {}

    def wrapper(*args: Any) -> Any:
        key = args if _executing_eagerly() else (args, tf.compat.v1.get_default_graph())
        if key not in cache:
            cache[key] = f(*args)
        return cache[key]

    return wrapper


def vars_to_refs(variables: List[Any]) -> List[Any]:
    if isinstance(variables, dict):
        return {v.ref(): k for k, v in variables.items()}  # type: ignore[return-value]
    return [v.ref() for v in variables]


def refs_to_vars(refs: Any) -> Any:
    if isinstance(refs, dict):
        return {v.deref(): k for k, v in refs.items()}
    return [r.deref() for r in refs]
