"""Where a training step's time goes, read from a TensorFlow profiler trace.

`tf.profiler.experimental` writes an `XSpace` protobuf (`*.xplane.pb`). Its
schema (tsl/profiler/protobuf/xplane.proto) is declared here with the public
protobuf API, so reading a trace needs neither TensorBoard's profile plugin
nor private TensorFlow modules. Every TensorFlow op kernel appears on the
host plane as an event named "op_name:OpType"; `op_class_seconds` sums their
durations per op class (matmul/conv, element-wise, casts, ...).

Example:
    >>> with profiled(logdir):
    ...     model.train_on_batch(x, y)
    >>> op_class_seconds(logdir)
    {'matmul/conv': 0.81, 'element-wise': 0.33, ...}
"""

from __future__ import annotations

import collections
import contextlib
import glob
import os
import re

import tensorflow as tf
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_FIELDS = {  # message -> [(name, number, type, label, message type)]; the subset of xplane.proto we read
    "XSpace": [("planes", 1, "message", "repeated", "XPlane")],
    "XPlane": [
        ("id", 1, "int64", "optional", None),
        ("name", 2, "string", "optional", None),
        ("lines", 3, "message", "repeated", "XLine"),
        ("event_metadata", 4, "message", "repeated", "XPlane.EventMetadataEntry"),
    ],
    "XPlane.EventMetadataEntry": [
        ("key", 1, "int64", "optional", None),
        ("value", 2, "message", "optional", "XEventMetadata"),
    ],
    "XLine": [
        ("id", 1, "int64", "optional", None),
        ("name", 2, "string", "optional", None),
        ("timestamp_ns", 3, "int64", "optional", None),
        ("events", 4, "message", "repeated", "XEvent"),
    ],
    "XEvent": [
        ("metadata_id", 1, "int64", "optional", None),
        ("offset_ps", 2, "int64", "optional", None),
        ("duration_ps", 3, "int64", "optional", None),
    ],
    "XEventMetadata": [
        ("id", 1, "int64", "optional", None),
        ("name", 2, "string", "optional", None),
        ("display_name", 4, "string", "optional", None),
    ],
}


def _xspace_class():
    proto = descriptor_pb2.FileDescriptorProto(
        name="keras_s2s_bench_xplane.proto", package="kss_xplane", syntax="proto3"
    )
    kinds = descriptor_pb2.FieldDescriptorProto
    messages = {}
    for full_name in _FIELDS:
        outer, _, inner = full_name.partition(".")
        if inner:
            nested = messages[outer].nested_type.add(name=inner)
            nested.options.map_entry = True
            messages[full_name] = nested
        else:
            messages[full_name] = proto.message_type.add(name=outer)
    for full_name, fields in _FIELDS.items():
        for name, number, kind, label, type_name in fields:
            field = messages[full_name].field.add(
                name=name, number=number, label=getattr(kinds, f"LABEL_{label.upper()}")
            )
            field.type = getattr(kinds, f"TYPE_{kind.upper()}")
            if type_name:
                field.type_name = f".kss_xplane.{type_name}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("kss_xplane.XSpace"))


XSpace = _xspace_class()

# Op types by class; anything unlisted is "other". Order matters: the first match wins.
OP_CLASSES = [
    (
        "matmul/conv",
        (
            "MatMul",
            "BatchMatMul",
            "Conv",
            "Einsum",
            "_MklMatMul",
            "_MklConv",
            "_FusedMatMul",
            "_FusedConv",
            "_MklFused",
            "_MklBatchMatMul",
            "_MklNative",
            "_MklEinsum",
        ),
    ),
    ("casts", ("Cast",)),
    (
        "softmax/normalisation",
        (
            "Softmax",
            "LogSoftmax",
            "SoftmaxCrossEntropy",
            "SparseSoftmax",
            "FusedBatchNorm",
            "_MklFusedBatchNorm",
            "_MklLayerNorm",
            "Mean",
            "Rsqrt",
            "RsqrtGrad",
            "Moments",
            "SquaredDifference",
            "Max",
            "LogSumExp",
        ),
    ),
    (
        "random (dropout)",
        (
            "StatelessRandom",
            "RandomUniform",
            "RandomStandardNormal",
            "StatelessTruncated",
            "Philox",
            "ThreefryFold",
        ),
    ),
    (
        "embedding gathers",
        (
            "GatherV2",
            "ResourceGather",
            "GatherNd",
            "UnsortedSegmentSum",
            "Unique",
            "ScatterNd",
            "TensorScatter",
            "ResourceScatter",
        ),
    ),
    (
        "optimizer update",
        (
            "ResourceApplyAdam",
            "AssignVariableOp",
            "AssignAddVariableOp",
            "AssignSubVariableOp",
            "ReadVariableOp",
            "ResourceApply",
        ),
    ),
    ("input pipeline", ("IteratorGetNext", "Iterator", "Dataset", "MapDataset", "PrefetchDataset")),
    (
        "control flow",
        (
            "While",
            "StatelessWhile",
            "If",
            "StatelessIf",
            "TensorList",
            "Enter",
            "Exit",
            "NextIteration",
            "LoopCond",
            "Merge",
            "Switch",
        ),
    ),
    (
        "element-wise",
        (
            "Add",
            "AddV2",
            "AddN",
            "Sub",
            "Mul",
            "RealDiv",
            "Div",
            "Tanh",
            "TanhGrad",
            "Sigmoid",
            "SigmoidGrad",
            "Relu",
            "ReluGrad",
            "Select",
            "SelectV2",
            "Where",
            "Sqrt",
            "SqrtGrad",
            "Square",
            "Exp",
            "Log",
            "Neg",
            "Maximum",
            "Minimum",
            "Pow",
            "Equal",
            "NotEqual",
            "Greater",
            "Less",
            "LogicalAnd",
            "LogicalOr",
            "LogicalNot",
            "BiasAdd",
            "BiasAddGrad",
            "Sum",
            "Tile",
            "Fill",
            "ZerosLike",
            "OnesLike",
            "Reciprocal",
            "Erf",
            "Sign",
            "Abs",
            "Floor",
            "Cumsum",
            "Range",
            "_MklAdd",
            "_MklMul",
            "_MklSquaredDifference",
            "_MklMaximum",
            "BroadcastTo",
            "Sin",
            "Cos",
            "Elu",
            "Gelu",
            "DivNoNan",
            "Softplus",
            "ClipByValue",
            "IsFinite",
            "Prod",
            "ArgMax",
        ),
    ),
    (
        "data movement",
        (
            "Transpose",
            "Reshape",
            "ConcatV2",
            "Concat",
            "Split",
            "SplitV",
            "Slice",
            "StridedSlice",
            "StridedSliceGrad",
            "Pack",
            "Unpack",
            "Pad",
            "PadV2",
            "MirrorPad",
            "Identity",
            "ExpandDims",
            "Squeeze",
            "Shape",
            "Size",
            "_MklTranspose",
            "_MklReshape",
            "_MklConcat",
            "ReverseV2",
            "ReverseSequence",
            "OneHot",
        ),
    ),
]


_FUNCTION_CALL = re.compile(r"(Stateful)?PartitionedCall(_\d+)?")
_COPY_NUMBER = re.compile(r"(_\d+)+$")


def op_class(op_type: str) -> str:
    """The class of a TensorFlow op type (e.g. 'MatMul' -> 'matmul/conv')."""
    for name, prefixes in OP_CLASSES:
        if any(op_type == p or op_type.startswith(p) for p in prefixes):
            return name
    return "other"


def _kernel_intervals(space):
    """(op name, op type, start s, duration s) of every op-kernel event on the host planes (one clock for all
    lines)."""
    for plane in space.planes:
        if not plane.name.startswith("/host:"):
            continue
        names = {key: meta.name for key, meta in plane.event_metadata.items()}
        for line in plane.lines:
            for event in line.events:
                name = names.get(event.metadata_id, "")
                # op kernels are "op_name:OpType"; "A::B" are runtime scopes
                if ":" not in name or "::" in name:
                    continue
                op_name, op_type = name.rsplit(":", 1)
                if op_type[:1].isupper() or op_type.startswith("_"):
                    yield (
                        op_name,
                        op_type,
                        line.timestamp_ns * 1e-9 + event.offset_ps * 1e-12,
                        event.duration_ps * 1e-12,
                    )


def _kernel_events(space):
    """(op type, seconds) of every op-kernel event on the host planes."""
    for _, op_type, _, seconds in _kernel_intervals(space):
        yield op_type, seconds


def read_xspace(logdir: str):
    """The newest profile under `logdir`, parsed."""
    paths = sorted(
        glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True), key=os.path.getmtime
    )
    if not paths:
        raise FileNotFoundError(f"no *.xplane.pb profile under {logdir}")
    space = XSpace()
    with open(paths[-1], "rb") as handle:
        space.ParseFromString(handle.read())
    return space


def op_type_seconds(logdir: str) -> collections.Counter:
    """Summed kernel seconds per op type (all threads: they can exceed wall time)."""
    totals = collections.Counter()
    for op_type, seconds in _kernel_events(read_xspace(logdir)):
        totals[op_type] += seconds
    return totals


def op_class_seconds(logdir: str) -> dict:
    """Summed kernel seconds per op class, largest first."""
    totals = collections.Counter()
    for op_type, seconds in op_type_seconds(logdir).items():
        totals[op_class(op_type)] += seconds
    return dict(totals.most_common())


def op_scope(op_name: str, depth: int = 3) -> str:
    """The pass and the first `depth` name scopes of an op: where in the model its kernel runs.

    The function-call scopes a `tf.function` adds (`StatefulPartitionedCall`) are left out, and the
    numbers that tell copies of a layer apart are dropped, so the copies add up ("decoder_2_1" and
    "decoder_0_1" are both "decoder").

    Example:
        >>> op_scope("StatefulPartitionedCall/gradient_tape/model_1/decoder_2_1/attention/Mul_2", depth=2)
        'backward model/decoder'
    """
    parts = [
        _COPY_NUMBER.sub("", part)
        for part in op_name.split("/")
        if not _FUNCTION_CALL.fullmatch(part)
    ]
    backward = "gradient_tape" in parts
    scopes = [part for part in parts if part != "gradient_tape"][:depth]
    return ("backward " if backward else "forward ") + "/".join(scopes)


def op_scope_seconds(logdir: str, op_class_name: str, depth: int = 3) -> collections.Counter:
    """Summed kernel seconds of one op class (e.g. 'element-wise') per `op_scope`, with the op type:
    which layers and passes emit that class's kernels."""
    totals = collections.Counter()
    for op_name, op_type, _, seconds in _kernel_intervals(read_xspace(logdir)):
        if op_class(op_type) == op_class_name:
            totals[f"{op_scope(op_name, depth)} {op_type}"] += seconds
    return totals


def kernel_concurrency(logdir: str) -> dict:
    """Seconds of the traced span during which exactly k op kernels ran at once, for each k.

    Control-flow kernels (While, If, ...) are left out: they only wait for
    the kernels of their body. A kernel that spreads its own work over the
    intra-op threads (a large matmul) counts once, so k is a lower bound on
    the cores at work; k = 0 is time no kernel ran at all (Python, the
    runtime, waiting).
    """
    edges = []
    for _, op_type, start, seconds in _kernel_intervals(read_xspace(logdir)):
        if op_class(op_type) != "control flow":
            edges += [(start, 1), (start + seconds, -1)]
    edges.sort()
    levels = collections.Counter()
    running = 0
    for (time, change), (next_time, _) in zip(edges, edges[1:]):
        running += change
        levels[running] += next_time - time
    return dict(sorted(levels.items()))


@contextlib.contextmanager
def profiled(logdir: str):
    """Profile everything TensorFlow runs inside the block into `logdir`."""
    tf.profiler.experimental.start(logdir)
    try:
        yield
    finally:
        tf.profiler.experimental.stop()
