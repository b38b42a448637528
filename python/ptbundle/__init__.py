"""ptbundle for Python: open one part of a bundle, checked, and call it.

    import ptbundle
    m = ptbundle.load("bundle", part="policy", keys=["pub.pem"], require_signature=True)
    m.inputs, m.outputs          # name, dtype, shape, dynamic bounds of each
    y = m(x)                     # NumPy arrays on the host
    y = m(x_gpu)                 # PyTorch or CuPy tensors on the GPU: zero-copy (DLPack)
    ptbundle.inspect("bundle")   # `ptbundle inspect --json`'s document, as a dict
    ptbundle.verify("bundle", keys=["pub.pem"])  # `ptbundle verify --json`'s

A ctypes binding of libptbundle's C interface (ptbundle/ptbundle.h), so no
compiled extension: the library is found through $PTBUNDLE_LIBRARY, beside
an installed module (<prefix>/lib), or in the source tree's build/ folder.
inspect and verify run the ptbundle command with --json ($PTBUNDLE_CLI, the
installed <prefix>/bin/ptbundle, build/apps/ptbundle, or ptbundle on $PATH), so
their documents are the command's own (schemas/inspect.schema.json,
schemas/verify.schema.json).

Errors raise ptbundle.Error, whose message is the library's one line (the
same text as `ptbundle verify` for a bundle that fails a check) and whose
`kind` is "invalid", "usage" or "io".

Threads: one Model is used by one thread at a time; see robot.h.
"""

import ctypes
import json
import os
import pathlib
import shutil
import subprocess

__all__ = ["Error", "Model", "TensorInfo", "load", "describe", "inspect", "verify", "library_path"]

_ABI_VERSION = 1
_KINDS = {1: "invalid", 2: "usage", 3: "io"}


class Error(Exception):
    """A refusal from ptbundle: `kind` is "invalid", "usage" or "io"."""

    def __init__(self, message, kind="invalid"):
        super().__init__(message)
        self.kind = kind


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_kDLCPU, _kDLCUDA = 1, 2
# PyTorch's dtype names -> DLPack (code, bits). kDLBool is 6 (DLPack 0.8).
_DL_TYPES = {
    "uint8": (1, 8), "int8": (0, 8), "int16": (0, 16), "int32": (0, 32), "int64": (0, 64),
    "float16": (2, 16), "float32": (2, 32), "float64": (2, 64), "bool": (6, 8), "bfloat16": (4, 16),
    "uint16": (1, 16), "uint32": (1, 32), "uint64": (1, 64),
}


def _package_root():
    return pathlib.Path(__file__).resolve().parent


def library_path():
    """Where libptbundle.so is taken from (see the module's help)."""
    given = os.environ.get("PTBUNDLE_LIBRARY")
    if given:
        return given
    here = _package_root()
    candidates = [
        here.parents[2] / "libptbundle.so",  # <prefix>/lib/python3/dist-packages/ptbundle
        here.parents[1] / "build" / "librobot" / "libptbundle.so",  # the source tree's python/ptbundle
    ]
    for candidate in candidates:
        if candidate.exists():
            return str(candidate)
    raise Error("libptbundle.so not found (looked at %s); set PTBUNDLE_LIBRARY to its path"
                % ", ".join(str(c) for c in candidates), "io")


_lib = None


def _library():
    global _lib
    if _lib is not None:
        return _lib
    lib = ctypes.CDLL(library_path())
    lib.ptb_abi_version.restype = ctypes.c_int
    if lib.ptb_abi_version() != _ABI_VERSION:
        raise Error("libptbundle's C interface is version %d; this module is for version %d"
                    % (lib.ptb_abi_version(), _ABI_VERSION), "usage")
    lib.ptb_last_error.restype = ctypes.c_char_p
    lib.ptb_options_new.restype = ctypes.c_void_p
    lib.ptb_options_free.argtypes = [ctypes.c_void_p]
    lib.ptb_options_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
    lib.ptb_options_add_key.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.ptb_model_open.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.ptb_model_free.argtypes = [ctypes.c_void_p]
    lib.ptb_model_describe.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.ptb_bundle_describe.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.ptb_string_free.argtypes = [ctypes.c_void_p]
    lib.ptb_model_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DLTensor), ctypes.c_size_t,
                                  ctypes.POINTER(_DLTensor), ctypes.c_size_t, ctypes.c_void_p]
    lib.ptb_model_run_timed.argtypes = lib.ptb_model_run.argtypes + [ctypes.c_int, ctypes.POINTER(ctypes.c_double)]
    _lib = lib
    return lib


def _check(status):
    if status != 0:
        raise Error(_library().ptb_last_error().decode("utf-8", "replace"), _KINDS.get(status, "invalid"))


def _take_json(pointer):
    lib = _library()
    try:
        return json.loads(ctypes.string_at(pointer.value).decode("utf-8", "replace"))
    finally:
        lib.ptb_string_free(pointer)


class _Options:
    def __init__(self, **values):
        lib = _library()
        self.handle = lib.ptb_options_new()
        if not self.handle:
            raise Error("out of memory", "io")
        for key in values.pop("keys", None) or []:
            if isinstance(key, os.PathLike):
                key = os.fspath(key)
            _check(lib.ptb_options_add_key(self.handle, key.encode()))
        for name, value in values.items():
            if value is None:
                continue
            text = ("true" if value else "false") if isinstance(value, bool) else str(value)
            _check(lib.ptb_options_set(self.handle, name.encode(), text.encode()))

    def __del__(self):
        if getattr(self, "handle", None) and _lib is not None:
            _lib.ptb_options_free(self.handle)
            self.handle = None


class TensorInfo:
    """One input or output: name, dtype (a PyTorch name, or None when the
    file records none), shape, dynamic [(dim, min, max)] (-1: unknown)."""

    def __init__(self, d):
        self.name = d["name"]
        self.known = d["known"]
        self.dtype = d["dtype"]
        self.shape = tuple(d["shape"])
        self.dynamic = [(x["dim"], x["min"], x["max"]) for x in d["dynamic"]]

    def __repr__(self):
        return "TensorInfo(name=%r, dtype=%r, shape=%r, dynamic=%r)" % (self.name, self.dtype, self.shape, self.dynamic)


def _dl_from_numpy(array, keep):
    import numpy as np
    if not isinstance(array, np.ndarray):
        raise Error("expected a NumPy array or a DLPack GPU tensor, got %s" % type(array).__name__, "usage")
    if not array.flags["C_CONTIGUOUS"]:
        raise Error("a NumPy array given to a model must be C-contiguous (np.ascontiguousarray)", "usage")
    name = "bool" if array.dtype == np.bool_ else array.dtype.name
    if name not in _DL_TYPES:
        raise Error("NumPy dtype %s is not one ptbundle runs" % array.dtype, "usage")
    shape = (ctypes.c_int64 * max(array.ndim, 1))(*array.shape)
    keep.append(shape)
    code, bits = _DL_TYPES[name]
    return _DLTensor(array.ctypes.data, _DLDevice(_kDLCPU, 0), array.ndim, _DLDataType(code, bits, 1),
                     shape, None, 0)


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _dl_from_capsule(tensor, keep):
    capsule = tensor.__dlpack__()
    pointer = _capsule_pointer(capsule, b"dltensor")
    keep.append(capsule)  # owns the DLManagedTensor until the call is done
    return ctypes.cast(pointer, ctypes.POINTER(_DLManagedTensor)).contents.dl_tensor


def _is_numpy(x):
    return type(x).__module__ == "numpy"


class Model:
    """One part of a bundle, loaded on a GPU (see load())."""

    def __init__(self, handle):
        self._handle = handle
        pointer = ctypes.c_void_p()
        _check(_library().ptb_model_describe(self._handle, ctypes.byref(pointer)))
        self.info = _take_json(pointer)
        self.inputs = [TensorInfo(d) for d in self.info["inputs"]]
        self.outputs = [TensorInfo(d) for d in self.info["outputs"]]

    def close(self):
        if self._handle:
            _library().ptb_model_free(self._handle)
            self._handle = None

    def __del__(self):
        if getattr(self, "_handle", None) and _lib is not None:
            _lib.ptb_model_free(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _new_outputs(self, like):
        shapes = []
        for spec in self.outputs:
            if not spec.known:
                raise Error("%s: the part records no dtype and shape for it; pass out=[...]" % spec.name, "usage")
            shapes.append((spec.shape, spec.dtype))
        if like is None:
            import numpy as np
            return [np.empty(shape, dtype=np.bool_ if dtype == "bool" else dtype) for shape, dtype in shapes]
        module = type(like).__module__.split(".")[0]
        if module == "torch":
            import torch
            return [torch.empty(shape, dtype=getattr(torch, dtype), device=like.device) for shape, dtype in shapes]
        if module == "cupy":
            import cupy
            with cupy.cuda.Device(like.device.id):
                return [cupy.empty(shape, dtype=dtype) for shape, dtype in shapes]
        raise Error("cannot make outputs like a %s; pass out=[...]" % type(like).__name__, "usage")

    @staticmethod
    def _stream_of(tensor):
        module = type(tensor).__module__.split(".")[0]
        if module == "torch":
            import torch
            return torch.cuda.current_stream(tensor.device).cuda_stream or None
        if module == "cupy":
            import cupy
            return cupy.cuda.get_current_stream().ptr or None
        return None

    def _prepare(self, inputs, out, stream):
        host = all(_is_numpy(x) for x in inputs)
        first = None if host or not inputs else inputs[0]
        outputs = list(out) if out is not None else self._new_outputs(first)
        keep = []
        to_dl = (lambda x: _dl_from_numpy(x, keep)) if host else (lambda x: _dl_from_capsule(x, keep))
        ins = (_DLTensor * max(len(inputs), 1))(*[to_dl(x) for x in inputs])
        outs = (_DLTensor * max(len(outputs), 1))(*[to_dl(x) for x in outputs])
        if not host and stream is None and first is not None:
            stream = self._stream_of(first)
        return outputs, keep, ins, outs, ctypes.c_void_p(stream) if stream else None

    def c_call_seconds(self, *inputs, out, iterations=1000, stream=None):
        """The host time per call of the same call made `iterations` times
        from C (ptb_model_run_timed): what this module's own overhead is
        measured against."""
        outputs, keep, ins, outs, stream = self._prepare(inputs, out, stream)
        seconds = ctypes.c_double()
        _check(_library().ptb_model_run_timed(self._handle, ins, len(inputs), outs, len(outputs), stream,
                                              iterations, ctypes.byref(seconds)))
        del keep
        return seconds.value

    def bind(self, *inputs, out=None, stream=None):
        """A call with its tensors fixed, for a control loop (the IO binding
        of ONNX Runtime): the DLPack descriptors are made once, so each
        call() is one C call. Refill the bound input tensors in place
        (x.copy_(new)) and read the bound outputs after each call; the
        binding keeps every tensor alive. Returns a Binding."""
        if not self._handle:
            raise Error("the model is closed", "usage")
        outputs, keep, ins, outs, stream = self._prepare(inputs, out, stream)
        return Binding(self, list(inputs), outputs, keep, ins, len(inputs), outs, len(outputs), stream)

    def __call__(self, *inputs, out=None, stream=None):
        """One call. NumPy arrays: run, outputs returned as new NumPy arrays
        (or written into `out`). GPU tensors with __dlpack__ (PyTorch, CuPy):
        read and written in place on the caller's current stream (or
        `stream`, a cudaStream_t as an int), nothing copied or synchronized.
        Returns the outputs (one, or a tuple)."""
        if not self._handle:
            raise Error("the model is closed", "usage")
        outputs, keep, ins, outs, stream = self._prepare(inputs, out, stream)
        _check(_library().ptb_model_run(self._handle, ins, len(inputs), outs, len(outputs), stream))
        del keep
        return outputs[0] if len(outputs) == 1 else tuple(outputs)


class Binding:
    """Model.bind(): one model call with its inputs, outputs and stream fixed."""

    def __init__(self, model, inputs, outputs, keep, ins, n_in, outs, n_out, stream):
        self.model, self.inputs, self.outputs = model, inputs, outputs
        self._keep = keep
        self._args = (ins, n_in, outs, n_out, stream)
        self._run = _library().ptb_model_run

    def __call__(self):
        """Runs the model on the bound inputs into the bound outputs;
        returns the outputs (one, or a tuple)."""
        if not self.model._handle:
            raise Error("the model is closed", "usage")
        status = self._run(self.model._handle, *self._args)
        if status:
            _check(status)
        return self.outputs[0] if len(self.outputs) == 1 else tuple(self.outputs)


def load(bundle, part=None, method=None, keys=(), require_signature=False, verify=True, device=0,
         runtime="auto", cuda_graphs=False, seed=0):
    """Opens one part of a bundle on the GPU, checked as robot.h says
    (signature with `keys`, the part's files, its test case), and returns a
    Model. A bundle that fails a check raises Error with verify's message."""
    options = _Options(keys=[os.fspath(k) for k in keys], part=part, method=method, device=device,
                       runtime=runtime, verify=verify, require_signature=require_signature,
                       cuda_graphs=cuda_graphs, seed=seed)
    handle = ctypes.c_void_p()
    _check(_library().ptb_model_open(os.fspath(bundle).encode(), options.handle, ctypes.byref(handle)))
    return Model(handle)


def describe(bundle, keys=(), require_signature=False):
    """A look into a bundle without a GPU: its parts, methods, each input's
    and output's dtype, shape and dynamic bounds, GPU targets, signature
    state. With keys the signature is checked over bundle.json first."""
    options = _Options(keys=[os.fspath(k) for k in keys], require_signature=require_signature)
    pointer = ctypes.c_void_p()
    _check(_library().ptb_bundle_describe(os.fspath(bundle).encode(), options.handle, ctypes.byref(pointer)))
    return _take_json(pointer)


def _cli():
    given = os.environ.get("PTBUNDLE_CLI")
    if given:
        return given
    here = _package_root()
    for candidate in (here.parents[3] / "bin" / "ptbundle", here.parents[1] / "build" / "apps" / "ptbundle"):
        if candidate.exists():
            return str(candidate)
    found = shutil.which("ptbundle")
    if found:
        return found
    raise Error("the ptbundle command was not found; set PTBUNDLE_CLI to its path", "io")


def _run_json(arguments):
    done = subprocess.run([_cli()] + arguments + ["--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          check=False)
    try:
        return json.loads(done.stdout.decode("utf-8", "replace"))
    except ValueError:
        raise Error("ptbundle %s printed no JSON document (exit %d): %s"
                    % (arguments[0], done.returncode, done.stderr.decode("utf-8", "replace").strip()), "io")


def inspect(path):
    """`ptbundle inspect PATH --json`'s document as a dict (an error document
    when it fails: its "exit_code" is not 0)."""
    return _run_json(["inspect", os.fspath(path)])


def verify(path, keys=(), require_signature=False, gpu=None):
    """`ptbundle verify PATH --key K... [--require-signature] --json`'s
    document as a dict; "ok" says whether every check passed."""
    arguments = ["verify", os.fspath(path)]
    for key in keys:
        arguments += ["--key", os.fspath(key)]
    if require_signature:
        arguments.append("--require-signature")
    if gpu is not None:
        arguments += ["--gpu", gpu]
    return _run_json(arguments)
