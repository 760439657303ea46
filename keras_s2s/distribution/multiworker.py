"""`MultiWorkerStrategy`: TensorFlow's multi-worker strategy with a `reduce` that Keras's `fit` can use
(TensorFlow only)."""

from __future__ import annotations

import tensorflow as tf


class MultiWorkerStrategy(tf.distribute.MultiWorkerMirroredStrategy):
    """`MultiWorkerMirroredStrategy` whose `reduce` takes what Keras 3.15's `fit` passes it.

    `fit` reduces (a) its first batch, a nested structure of per-replica
    values, to learn the input shapes, and (b) every scalar it logs with
    `axis=0`. `MultiWorkerMirroredStrategy.reduce` accepts neither
    (keras-team/keras#20585: "Attempt to convert a value (PerReplica ...)").
    This `reduce` maps over structures and reduces a scalar across replicas
    without an axis; everything else is the parent's collective reduce.
    """

    def reduce(self, reduce_op, value, axis):
        def reduce_one(v):
            local = (
                self.experimental_local_results(v)[0]
                if isinstance(v, tf.distribute.DistributedValues)
                else v
            )
            rank = getattr(local, "shape", tf.TensorShape([])).rank
            return super(MultiWorkerStrategy, self).reduce(
                reduce_op, v, None if rank == 0 else axis
            )

        return tf.nest.map_structure(reduce_one, value)
