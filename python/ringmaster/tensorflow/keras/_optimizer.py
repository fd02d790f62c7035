"""The distributed optimizer that ``ringmaster.tensorflow.keras`` and
``ringmaster.keras`` share: a subclass of the wrapped optimizer's own class
whose gradients are reduced across ranks (in buckets, or one op per group:
make_allreduce_grads_fn), for Keras 3 and tf_keras, and ``load_model``,
which restores a model with one.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence

import tensorflow as tf

from ..gradient_aggregation import LocalGradientAggregationHelper, reduce_except_local, variable_key
from ..mpi_ops import pipelined
from . import _impl


def check_optimizer_args(op: Any, gradient_predivide_factor: float, num_groups: int, groups: Any) -> Any:
    if gradient_predivide_factor != 1.0:
        rocm = getattr(_impl.rm(), "rocm_built", None)
        if rocm is not None and rocm():
            raise ValueError("gradient_predivide_factor not supported yet with ROCm")
    if not (_impl._same_op(op, _impl.op_average()) or _impl._same_op(op, _impl.op_sum())):
        raise ValueError("op currently only supports Average and Sum")
    if num_groups != 0:
        warnings.warn("Parameter `num_groups` has been replaced by `groups` and will be removed in v0.23.0.",
                      DeprecationWarning)
        if groups is None:
            groups = num_groups
    if groups is not None:
        if not (isinstance(groups, list) or groups > 0):
            raise ValueError("groups should be a non-negative integer or a list of list of tf.Variable.")
    return groups


def buckets(grads: List[Any], present: List[int]) -> List[List[int]]:
    """The buckets of the gradients at ``present`` (ringmaster.tensorflow._buckets)."""
    from .. import _buckets
    return _buckets.plan_for(grads, present)


def make_allreduce_grads_fn(compression: Any, sparse_as_dense: bool, op: Any, gradient_predivide_factor: float,
                            groups: Any, process_set: Any) -> Callable[[List[Any], List[Any]], List[Any]]:
    """fn(grads, variables) -> the reduced gradients, in order: one
    collective per bucket of the job's bytes_per_pack (16 MiB if unset), the
    last variables' first (ringmaster.tensorflow._buckets), or one per group
    with ``groups``."""
    if _impl._same_op(op, _impl.op_average()):
        # The division by the group size happens in the collective; the
        # factor only moves part of it before the sum (overflow in fp16).
        prescale, postscale = 1.0 / gradient_predivide_factor, float(gradient_predivide_factor)
    else:
        prescale = postscale = 1.0

    def reduce_list(items: List[Any]) -> List[Any]:
        return _impl.grouped_allreduce(items, op=op, compression=compression, prescale_factor=prescale,
                                       postscale_factor=postscale, process_set=process_set)

    def allreduce_grads(grads: List[Any], variables: Optional[List[Any]] = None) -> List[Any]:
        grads = list(grads)
        if process_set is not None and hasattr(process_set, "included") and process_set.included() is False:
            return grads  # a rank outside the process set keeps its own gradients (Horovod's rule)
        if sparse_as_dense:
            grads = [_impl._dense(g) if g is not None else None for g in grads]
        present = [i for i, g in enumerate(grads) if g is not None]
        split: List[List[int]]
        if groups is None:
            split = buckets(grads, present)
        elif isinstance(groups, list):
            where = {variable_key(variables[i]): i for i in present}
            split = []
            for group in groups:
                members = [where.pop(variable_key(v)) for v in group if variable_key(v) in where]
                split.append(members)
            split += [[i] for i in present if i in where.values()]
        else:
            from .._tape import _split  # consecutive groups of near-equal length, as the tape's
            split = _split(present, int(groups))
        out = list(grads)
        with pipelined():  # in a graph, each bucket on the wire while the next is computed (mpi_ops)
            for members in split:
                if not members:
                    continue
                for i, r in zip(members, reduce_list([grads[i] for i in members])):
                    out[i] = r
        return out

    return allreduce_grads


def is_keras3_optimizer(optimizer: Any) -> bool:
    """Keras 3 (``keras>=3``) rather than tf_keras / Keras 2."""
    for cls in type(optimizer).__mro__:
        mod = cls.__module__ or ""
        if mod.startswith("keras.src.optimizers") or mod.startswith("keras.src.backend"):
            return True
        if mod.startswith(("tf_keras", "keras.optimizers", "keras.src.optimizers.legacy")):
            return False
    return hasattr(optimizer, "apply") and hasattr(optimizer, "stateless_apply")


_CLASS_CACHE: Dict[Any, type] = {}


def distributed_class(base: type, *, name: Optional[str] = None, compression: Any = None,
                      sparse_as_dense: bool = False, gradient_predivide_factor: float = 1.0, op: Any = None,
                      backward_passes_per_step: int = 1, average_aggregated_gradients: bool = False,
                      groups: Any = None, process_set: Any = None, scale_local_gradients: bool = True,
                      keras3: Optional[bool] = None) -> type:
    """A subclass of the optimizer class ``base`` with the same name and module
    (so saved models name the plain optimizer) whose gradients are all-reduced.

    Keras 3: ``apply(grads, trainable_variables)`` (what ``apply_gradients``
    and ``model.fit`` call) reduces the gradients. tf_keras (new and legacy
    optimizers), as Horovod: ``compute_gradients`` / ``_compute_gradients`` /
    ``get_gradients`` (what ``minimize`` and ``model.fit`` call) return the
    reduced gradients, and ``apply_gradients`` applies every
    ``backward_passes_per_step``-th call."""
    if getattr(base, "_ringmaster_distributed", False):
        base = base.__bases__[0]
    op = _impl.op_average() if op is None else op
    if keras3 is None:
        keras3 = any((c.__module__ or "").startswith("keras.src.") for c in base.__mro__) and not any(
            (c.__module__ or "").startswith("keras.src.optimizers.legacy") for c in base.__mro__)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        base.__init__(self, *args, **kwargs)
        new_name = name or "Distributed%s" % base.__name__
        if keras3 or not hasattr(self, "_name"):
            self.name = new_name
        else:
            self._name = new_name
        self._aggregated_gradients = False
        self._allreduce_grads = make_allreduce_grads_fn(compression, sparse_as_dense, op,
                                                        gradient_predivide_factor, groups, process_set)
        self._local_vars = _KeySet()
        self.process_set = process_set
        self.scale_local_gradients = scale_local_gradients
        self._agg_helper = None
        if backward_passes_per_step > 1:
            self._agg_helper = LocalGradientAggregationHelper(
                backward_passes_per_step=backward_passes_per_step, allreduce_func=self._allreduce_grads,
                sparse_as_dense=sparse_as_dense, average_aggregated_gradients=average_aggregated_gradients,
                process_set=process_set, scale_local_gradients=scale_local_gradients)

    def register_local_var(self, var: Any) -> None:
        """This variable's gradient stays local: not all-reduced (divided by
        the number of ranks when scale_local_gradients)."""
        if self._agg_helper:
            self._agg_helper.register_local_var(var)
        else:
            self._local_vars.add(variable_key(var))

    def _allreduce(self, grads: Sequence[Any], variables: Sequence[Any]) -> List[Any]:
        self._aggregated_gradients = True
        if self._agg_helper:
            return self._agg_helper.compute_gradients(tuple(grads), tuple(variables))
        return reduce_except_local(grads, variables, self._allreduce_grads, self._local_vars.keys,
                                   self.scale_local_gradients, self.process_set)

    body: Dict[str, Any] = {"__init__": __init__, "register_local_var": register_local_var,
                            "_allreduce": _allreduce, "_ringmaster_distributed": True,
                            "_HAS_AGGREGATE_GRAD": True, "__module__": base.__module__,
                            "__qualname__": base.__qualname__, "__doc__": base.__doc__}

    if keras3:
        def apply(self, grads, trainable_variables=None):
            grads = list(grads)
            if not grads:
                return base.apply(self, grads, trainable_variables)
            if trainable_variables is None:
                variables = list(self._trainable_variables)
            else:
                variables = list(trainable_variables)
                if not self.built:
                    # Built here, not in a branch of the aggregation's tf.cond.
                    from keras.src import backend as kbackend
                    with kbackend.name_scope(self.name, caller=self):
                        self.build(variables)
                    self.built = True
            reduced = self._allreduce(grads, variables)
            if not self._agg_helper:
                return base.apply(self, reduced, trainable_variables)
            return self._agg_helper.apply_gradients(lambda: base.apply(self, reduced, trainable_variables), self)

        def _compute_gradients(self, loss, var_list, grad_loss=None, tape=None):
            """Horovod's ``_compute_gradients``: the gradients, not yet reduced
            (Keras 3 reduces them in ``apply``)."""
            tape = tf.GradientTape() if tape is None else tape
            if callable(loss):
                with tape:
                    if callable(var_list):
                        var_list = var_list()
                    tape.watch(var_list)
                    loss = loss()
            elif callable(var_list):
                var_list = var_list()
            var_list = list(var_list)
            grads = tape.gradient(loss, var_list, grad_loss)
            return list(zip(grads, var_list))

        body.update(apply=apply, _compute_gradients=_compute_gradients)
    else:
        def compute_gradients(self, loss, var_list, tape=None):
            return self._compute_gradients(loss, var_list, None, tape)

        def _compute_gradients(self, loss, var_list, grad_loss=None, tape=None):
            parent = super(cls, self)
            tape = tf.GradientTape() if tape is None else tape
            if hasattr(parent, "_compute_gradients"):
                grads_and_vars = parent._compute_gradients(loss, var_list, grad_loss, tape=tape)
            else:
                grads_and_vars = parent.compute_gradients(loss, var_list, tape=tape)
            grads_and_vars = list(grads_and_vars)
            grads, variables = [g for g, _ in grads_and_vars], [v for _, v in grads_and_vars]
            return list(zip(self._allreduce(grads, variables), variables))

        def get_gradients(self, loss, params):
            grads = super(cls, self).get_gradients(loss, params)
            return self._allreduce(grads, params)

        def apply_gradients(self, *args, **kwargs):
            parent = super(cls, self)
            if not self._agg_helper:
                return parent.apply_gradients(*args, **kwargs)
            args = list(args)
            if args:
                args[0] = list(args[0])
            elif "grads_and_vars" in kwargs:
                kwargs["grads_and_vars"] = list(kwargs["grads_and_vars"])
            pairs = args[0] if args else kwargs["grads_and_vars"]
            build = getattr(self, "_create_all_weights", None) or getattr(self, "build", None)
            if build is not None and not getattr(self, "_ringmaster_built", False):
                # Slots before the tf.cond (variables are not created in a branch).
                with tf.init_scope():
                    build([v for _, v in pairs])
                self._ringmaster_built = True
            return self._agg_helper.apply_gradients(lambda: parent.apply_gradients(*args, **kwargs), self)

        body.update(compute_gradients=compute_gradients, _compute_gradients=_compute_gradients,
                    get_gradients=get_gradients, apply_gradients=apply_gradients)

    # Reduced across ranks already, in buckets: without a tf.distribute
    # strategy, the optimizer's own sum over the default strategy's one
    # replica changes nothing but joins every gradient (one IdentityN) before
    # any update; skipped, each bucket's variables are updated once it is
    # reduced. (Keras 3, tf_keras, tf_keras legacy.)
    for method in ("_all_reduce_sum_gradients", "aggregate_gradients", "_aggregate_gradients"):
        if hasattr(base, method):
            body[method] = _unless_strategy(method, lambda: cls)

    cls = type(base.__name__, (base,), body)
    return cls


def _unless_strategy(method: str, owner: Callable[[], type]) -> Callable[[Any, Any], Any]:
    """The optimizer's ``method`` (a sum of (gradient, variable) pairs over
    the strategy's replicas) under a tf.distribute strategy; without one, the
    pairs as they are."""
    def aggregate(self: Any, grads_and_vars: Any) -> Any:
        if tf.distribute.has_strategy():
            return getattr(super(owner(), self), method)(grads_and_vars)
        return list(grads_and_vars)
    aggregate.__name__ = method
    return aggregate


class _KeySet:
    """A set of variable keys kept out of Keras's attribute tracking."""

    def __init__(self) -> None:
        self.keys: set = set()

    def add(self, key: Any) -> None:
        self.keys.add(key)

    def __contains__(self, key: Any) -> bool:
        return key in self.keys

    def __len__(self) -> int:
        return len(self.keys)


def create_distributed_optimizer(optimizer: Any, local_vars: Sequence[Any] = (), **settings: Any) -> Any:
    """An optimizer of a subclass of ``type(optimizer)`` with its config."""
    if getattr(type(optimizer), "_ringmaster_distributed", False):
        raise ValueError("DistributedOptimizer: the optimizer is already a DistributedOptimizer")
    cls = distributed_class(type(optimizer), keras3=is_keras3_optimizer(optimizer), **settings)
    opt = cls.from_config(optimizer.get_config())
    for v in local_vars:
        opt.register_local_var(v)
    return opt


# ------------------------------------------------------------ collectives


def load_model(keras: Any, make_class: Callable[[type], type], filepath: Any, custom_optimizers: Any,
               custom_objects: Any, legacy_opts: bool = False) -> Any:
    """keras.models.load_model with every optimizer class of ``keras`` (and
    ``custom_optimizers``) replaced by its distributed subclass."""
    if legacy_opts:
        known = list(keras.optimizers.legacy.Optimizer.__subclasses__())
    else:
        known = list(keras.optimizers.Optimizer.__subclasses__())
    objects: Dict[str, Any] = {}
    for cls in known:
        if getattr(cls, "_ringmaster_distributed", False):
            continue
        wrapped = make_class(cls)
        objects[cls.__name__.lower()] = wrapped
        objects[cls.__name__] = wrapped
    for cls in custom_optimizers or []:
        objects[cls.__name__] = make_class(cls)
    if custom_objects is not None:
        objects.update(custom_objects)
    model = keras.models.load_model(filepath, custom_objects=objects)
    opt = getattr(model, "optimizer", None)
    if opt is not None and not getattr(type(opt), "_ringmaster_distributed", False) and is_keras3_optimizer(opt):
        # Keras 3 looks built-in classes up by module, not in custom_objects:
        # the restored optimizer is swapped for its distributed subclass, its
        # state copied over.
        model.optimizer = _distributed_copy(opt, make_class(type(opt)), model)
    return model


def _distributed_copy(opt: Any, cls: type, model: Any) -> Any:
    new = cls.from_config(opt.get_config())
    if getattr(opt, "built", False):
        new.build(model.trainable_variables)
        old_vars, new_vars = list(opt.variables), list(new.variables)
        if len(old_vars) == len(new_vars):
            for a, b in zip(old_vars, new_vars):
                b.assign(a)
    return new
