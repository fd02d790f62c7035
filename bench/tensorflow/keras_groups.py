"""The Keras benchmark's groups (bench_keras.py): N, the models' sizes, and
each group's ranks, environment and cases in order. Shared by the launcher,
the ranks and the report."""
from __future__ import annotations

N = 3
LOCAL_BATCH = 32
MODELS = {
    # units of the Dense layers after a 1024-wide input
    "full": (1024, [4096, 4096, 1024, 10]),   # 25,185,290 parameters
    "small": (256, [512, 512, 256, 10]),      # 526,090 parameters (smoke test)
}

RM_ALLREDUCES = ["allreduce/ringmaster", "allreduce-eager/ringmaster", "allreduce-engine/ringmaster",
                 "allreduce-engine-out/ringmaster", "allreduce-engine-pertensor/ringmaster",
                 "allreduce-engine-tf/ringmaster", "allreduce-copy/none", "allreduce-fresh/ringmaster",
                 "allreduce-grouped/ringmaster", "allreduce-grouped-eager/ringmaster",
                 "allreduce-pertensor/ringmaster", "allreduce-pertensor-eager/ringmaster",
                 "tape/ringmaster", "tape/none", "tape-eager/ringmaster", "tape-eager/none",
                 "tape-engine/ringmaster", "tape-eager-engine/ringmaster"]
# group name -> (ranks, env additions, cases in order)
GROUPS = {
    "rm-tf_keras": (N, {"TF_USE_LEGACY_KERAS": "1"},
                    RM_ALLREDUCES + ["step/ringmaster", "step/none", "fit-tf_keras/ringmaster", "fit-tf_keras/none"]),
    "mwms": (N, {"TF_USE_LEGACY_KERAS": "1"}, ["allreduce/mwms", "step/mwms", "fit-tf_keras/mwms"]),
    # The same code as "mwms" under ringmaster.tensorflow.MultiWorkerMirroredStrategy
    "rm-mwms": (N, {"TF_USE_LEGACY_KERAS": "1"},
                ["allreduce/rm-mwms", "allreduce-eager/rm-mwms", "strategy-run-eager/rm-mwms", "step/rm-mwms",
                 "fit-tf_keras/rm-mwms"]),
    "rm-keras3": (N, {}, ["fit-keras3/ringmaster", "fit-keras3/none"]),
    "single": (1, {"TF_USE_LEGACY_KERAS": "1"}, ["step/none", "fit-tf_keras/none"]),
    # Horovod's venv (Keras 2.13 is tf.keras there: no TF_USE_LEGACY_KERAS)
    "horovod": (N, {}, ["allreduce-grouped/horovod", "allreduce-pertensor/horovod", "step/horovod", "step/none",
                        "fit-keras2/horovod", "fit-keras2/none"]),
}
HOROVOD_GROUP = "horovod"
RM = "rm-tf_keras"
# Groups whose ranks can never be kept between their turns (--keep):
# Horovod's background thread coordinates over Gloo every cycle (1 ms) even
# with nothing to reduce, 7-13 % of a vCPU per rank measured here while it
# waited, which the other groups' turns would pay for.
NEVER_KEPT = {HOROVOD_GROUP}
