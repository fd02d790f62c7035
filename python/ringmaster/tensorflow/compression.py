"""Gradient compression, with Horovod's names: ``Compression.none`` sends
tensors as they are, ``Compression.fp16`` sends floating-point tensors as
float16 (half the bytes on the wire) and casts the result back."""
from __future__ import annotations

from typing import Any, Tuple

import tensorflow as tf


class Compressor:
    """compress(tensor) -> (tensor to send, context); decompress(tensor, context)."""

    @staticmethod
    def compress(tensor: Any) -> Tuple[Any, Any]:
        raise NotImplementedError

    @staticmethod
    def decompress(tensor: Any, ctx: Any) -> Any:
        raise NotImplementedError


class NoneCompressor(Compressor):
    @staticmethod
    def compress(tensor: Any) -> Tuple[Any, Any]:
        return tensor, None

    @staticmethod
    def decompress(tensor: Any, ctx: Any) -> Any:
        return tensor


class FP16Compressor(Compressor):
    """Floating-point tensors travel as float16; other dtypes as they are."""

    @staticmethod
    def compress(tensor: Any) -> Tuple[Any, Any]:
        dtype = tensor.dtype
        if dtype.is_floating and dtype != tf.float16:
            return tf.cast(tensor, tf.float16), dtype
        return tensor, dtype

    @staticmethod
    def decompress(tensor: Any, ctx: Any) -> Any:
        return tensor if ctx is None or tensor.dtype == ctx else tf.cast(tensor, ctx)


class Compression:
    """The compressors, as Horovod names them."""

    none = NoneCompressor
    fp16 = FP16Compressor


def compressed(compression: Any, tensors: Any, collective: Any) -> list:
    """``collective(sent)`` on the compressed ``tensors``, each result
    decompressed with its own context (one collective for the whole list)."""
    sent, ctxs = [], []
    for t in tensors:
        c, ctx = compression.compress(tf.convert_to_tensor(t))
        sent.append(c)
        ctxs.append(ctx)
    return [compression.decompress(r, ctx) for r, ctx in zip(collective(sent), ctxs)]
