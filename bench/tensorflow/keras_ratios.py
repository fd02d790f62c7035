"""The Keras benchmark's figures (bench_keras.py): every ratio the report
prints, which groups' cases it divides and its goal."""
from __future__ import annotations

import rounds as rd
from keras_groups import HOROVOD_GROUP, RM


def ref_words(ref):
    """A same-work row's reference, in words."""
    words = {"allreduce-engine-out/ringmaster": "the engine out of place",
             "allreduce-engine-pertensor/ringmaster": "the engine per tensor, out of place",
             "strategy-run-eager/rm-mwms": "strategy.run's own eager cost",
             "tape-engine/ringmaster": "the same tape without it, then the engine in place on its gradients",
             "tape-eager-engine/ringmaster": "the same tape without it, then the engine out of place on its "
                                             "gradients"}
    return " + ".join(words[case] for _, case in ref)


# --hosts netns: the step across shaped links against its bound.
SHAPED_CASES = ("step/ringmaster,step/none,allreduce/ringmaster,step/mwms,allreduce/mwms,"
                "step/horovod,allreduce-grouped/horovod")


def shaped_ratios(horovod: bool) -> list[rd.Ratio]:
    """Across emulated hosts: each system's step against max(compute alone,
    its all-reduce of the gradients alone), the step of perfect overlap;
    then the peers' steps against ours, as in the local report."""
    R = rd.Ratio
    compute = (RM, "step/none")
    bound = "step / max(compute alone, the gradients' all-reduce alone)"
    out = [
        R(bound, "Ringmaster, DistributedGradientTape (buckets)", ((RM, "step/ringmaster"),),
          (compute, (RM, "allreduce/ringmaster")), ("<=", 1.15), "ringmaster", den_max=True),
        R(bound, "MWMS (RING, bytes_per_pack)", (("mwms", "step/mwms"),), (compute, ("mwms", "allreduce/mwms")),
          None, "mwms", den_max=True),
        R("compute and communication alone", "the gradients' all-reduce alone / compute alone (Ringmaster)",
          ((RM, "allreduce/ringmaster"),), (compute,), None, "comm / compute"),
        R("Peer / Ringmaster, the same step across the links", "MWMS (RING, bytes_per_pack) / Ringmaster",
          (("mwms", "step/mwms"),), ((RM, "step/ringmaster"),), (">=", 1.2), "mwms / rm"),
    ]
    if horovod:
        H = HOROVOD_GROUP
        out.insert(2, R(bound, "Horovod 0.28.1 (Gloo), DistributedGradientTape", ((H, "step/horovod"),),
                        ((H, "step/none"), (H, "allreduce-grouped/horovod")), None, "horovod", den_max=True))
        out.append(R("Peer / Ringmaster, the same step across the links", "Horovod 0.28.1 (Gloo) / Ringmaster",
                     ((H, "step/horovod"),), ((RM, "step/ringmaster"),), (">=", 1.2), "horovod / rm"))
    return out


def ratios(horovod: bool, shaped: bool = False) -> list[rd.Ratio]:
    """The report's figures. Each is a per-round ratio of groups that ran in
    the same round; > 1 in the peer sections means Ringmaster is faster."""
    if shaped:
        return shaped_ratios(horovod)
    R = rd.Ratio
    out = [
        R("MWMS (RING) / Ringmaster", "all-reduce, rm.all_reduce (tf.function)",
          (("mwms", "allreduce/mwms"),), ((RM, "allreduce/ringmaster"),), (">=", 5.0), "all-reduce"),
        R("MWMS (RING) / Ringmaster", "training step, custom loop (tf.function)",
          (("mwms", "step/mwms"),), ((RM, "step/ringmaster"),), (">=", 2.0), "step"),
        R("MWMS (RING) / Ringmaster", "model.fit step, tf_keras both",
          (("mwms", "fit-tf_keras/mwms"),), ((RM, "fit-tf_keras/ringmaster"),), (">=", 2.0), "fit tf_keras"),
        R("MWMS (RING) / Ringmaster", "model.fit step, Keras 3 (ours) vs tf_keras (MWMS)",
          (("mwms", "fit-tf_keras/mwms"),), (("rm-keras3", "fit-keras3/ringmaster"),), (">=", 2.0), "fit Keras 3"),
        R("TensorFlow's MWMS / ours, the constructor changed", "all-reduce (tf.function)",
          (("mwms", "allreduce/mwms"),), (("rm-mwms", "allreduce/rm-mwms"),), (">=", 2.0), "all-reduce"),
        R("TensorFlow's MWMS / ours, the constructor changed", "training step, custom loop",
          (("mwms", "step/mwms"),), (("rm-mwms", "step/rm-mwms"),), (">=", 2.0), "step"),
        R("TensorFlow's MWMS / ours, the constructor changed", "model.fit step, tf_keras",
          (("mwms", "fit-tf_keras/mwms"),), (("rm-mwms", "fit-tf_keras/rm-mwms"),), (">=", 2.0), "fit"),
        R("Our strategy / the same step on Ringmaster's API (a cost)", "all-reduce (tf.function)",
          (("rm-mwms", "allreduce/rm-mwms"),), ((RM, "allreduce/ringmaster"),), ("<=", 1.1), "all-reduce"),
        R("Our strategy / the same step on Ringmaster's API (a cost)", "training step, custom loop",
          (("rm-mwms", "step/rm-mwms"),), ((RM, "step/ringmaster"),), ("<=", 1.1), "step"),
        R("Our strategy / the same step on Ringmaster's API (a cost)", "model.fit step, tf_keras",
          (("rm-mwms", "fit-tf_keras/rm-mwms"),), ((RM, "fit-tf_keras/ringmaster"),), ("<=", 1.1), "fit"),
    ]
    engine = ((RM, "allreduce-engine/ringmaster"),)
    for name, key, short in [
            ("rm.all_reduce, tf.function", (RM, "allreduce/ringmaster"), "all_reduce tf.f"),
            ("rm.all_reduce, eager", (RM, "allreduce-eager/ringmaster"), "all_reduce eager"),
            ("grouped_allreduce, tf.function", (RM, "allreduce-grouped/ringmaster"), "grouped tf.f"),
            ("grouped_allreduce, eager", (RM, "allreduce-grouped-eager/ringmaster"), "grouped eager"),
            ("per-tensor allreduce, tf.function", (RM, "allreduce-pertensor/ringmaster"), "per-tensor tf.f"),
            ("per-tensor allreduce, eager", (RM, "allreduce-pertensor-eager/ringmaster"), "per-tensor eager"),
            ("our strategy's all_reduce (CrossDeviceOps), tf.function", ("rm-mwms", "allreduce/rm-mwms"),
             "strategy tf.f"),
            ("our strategy's all_reduce (CrossDeviceOps), eager", ("rm-mwms", "allreduce-eager/rm-mwms"),
             "strategy eager")]:
        out.append(R("Our Python paths / the engine alone on the same buffers (a cost)", name, (key,), engine,
                     ("<=", 1.1), short))
    engine_out = ((RM, "allreduce-engine-out/ringmaster"),)
    for name, key, short in [
            ("rm.all_reduce, tf.function", (RM, "allreduce/ringmaster"), "all_reduce tf.f / out"),
            ("rm.all_reduce, eager", (RM, "allreduce-eager/ringmaster"), "all_reduce eager / out")]:
        out.append(R("Our Python paths / the engine alone on the same buffers (a cost)",
                     f"{name} / the engine out of place (inputs only read, as the op's captured ones)", (key,),
                     engine_out, ("<=", 1.1), short))
    out.append(R("Our Python paths / the engine alone on the same buffers (a cost)",
                 "the engine out of place / in place", engine_out, engine, None, "engine out / in"))
    out.append(R("Our Python paths / the engine alone on the same buffers (a cost)",
                 "the engine in place on buffers TensorFlow allocated / on NumPy's (huge pages)",
                 ((RM, "allreduce-engine-tf/ringmaster"),), engine, None, "engine TF / NumPy"))
    # Eager inputs are held by Python, so eagerly the op cannot reduce in
    # place: the same work is the engine out of place (per tensor for the
    # per-tensor calls, which run one after the other).
    same = "/ the engine doing the same work"
    for name, key, ref, short in [
            ("grouped_allreduce, eager", (RM, "allreduce-grouped-eager/ringmaster"), engine_out, "grouped eager / out"),
            ("per-tensor allreduce, eager", (RM, "allreduce-pertensor-eager/ringmaster"),
             ((RM, "allreduce-engine-pertensor/ringmaster"),), "per-tensor eager / per tensor"),
            ("our strategy's all_reduce (CrossDeviceOps), eager", ("rm-mwms", "allreduce-eager/rm-mwms"),
             engine_out + (("rm-mwms", "strategy-run-eager/rm-mwms"),), "strategy eager / out + run"),
            ("DistributedGradientTape, tf.function", (RM, "tape/ringmaster"), ((RM, "tape-engine/ringmaster"),),
             "tape tf.f / tape, engine"),
            ("DistributedGradientTape, eager", (RM, "tape-eager/ringmaster"), ((RM, "tape-eager-engine/ringmaster"),),
             "tape eager / tape, engine")]:
        out.append(R("Our Python paths / the engine alone on the same buffers (a cost)", f"{name} {same}: {ref_words(ref)}",
                     (key,), ref, ("<=", 1.1), short))
    out.append(R("Our Python paths / the engine alone on the same buffers (a cost)",
                 "rm.all_reduce on tensors made in the graph (in place), tf.function / (the engine + the copy "
                 "that made them)", ((RM, "allreduce-fresh/ringmaster"),), engine + ((RM, "allreduce-copy/none"),),
                 ("<=", 1.1), "fresh tf.f"))
    out.append(R("Our Python paths / the engine alone on the same buffers (a cost)",
                 "a fresh copy of the 8 tensors alone (tf.raw_ops.Snapshot, tf.function) / the engine",
                 ((RM, "allreduce-copy/none"),), engine, None, "copy alone"))
    for name, mode, short in [("DistributedGradientTape, tf.function", "tape", "tape tf.f"),
                              ("DistributedGradientTape, eager", "tape-eager", "tape eager")]:
        out.append(R("Our Python paths / the engine alone on the same buffers (a cost)",
                     f"{name} / (the engine + the same tape without it)", ((RM, f"{mode}/ringmaster"),),
                     engine + ((RM, f"{mode}/none"),), ("<=", 1.1), short))
    if horovod:
        H = HOROVOD_GROUP
        out += [
            R("Horovod 0.28.1 (Gloo) / Ringmaster", "all-reduce, grouped_allreduce(grads, op=Sum) (tf.function)",
              ((H, "allreduce-grouped/horovod"),), ((RM, "allreduce-grouped/ringmaster"),), (">=", 1.1), "grouped"),
            R("Horovod 0.28.1 (Gloo) / Ringmaster", "all-reduce, per-tensor allreduce(g, op=Sum) (tf.function)",
              ((H, "allreduce-pertensor/horovod"),), ((RM, "allreduce-pertensor/ringmaster"),), (">=", 1.1),
              "per-tensor"),
            R("Horovod 0.28.1 (Gloo) / Ringmaster", "training step, custom loop, DistributedGradientTape",
              ((H, "step/horovod"),), ((RM, "step/ringmaster"),), (">=", 1.0), "step"),
            R("Horovod 0.28.1 (Gloo) / Ringmaster", "model.fit step, Keras 2, DistributedOptimizer",
              ((H, "fit-keras2/horovod"),), ((RM, "fit-tf_keras/ringmaster"),), (">=", 1.0), "fit"),
            R("Horovod 0.28.1 (Gloo) / Ringmaster", "compute floor, custom loop step, no all-reduce (TF builds)",
              ((H, "step/none"),), ((RM, "step/none"),), None, "floor step"),
            R("Horovod 0.28.1 (Gloo) / Ringmaster", "compute floor, model.fit step, no all-reduce (TF builds)",
              ((H, "fit-keras2/none"),), ((RM, "fit-tf_keras/none"),), None, "floor fit"),
        ]
    return out
