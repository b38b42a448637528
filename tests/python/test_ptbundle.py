"""The Python module (python/ptbundle) on the C interface: inspect, verify,
describe without a GPU, misuse, and refusing a bundle whose weights changed
after signing with verify's message. CPU only; test_ptbundle_gpu.py holds
the GPU tier. ctest sets PTBUNDLE_LIBRARY, PTBUNDLE_CLI and PYTHONPATH."""

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "python"))
import ptbundle  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]


def fixtures():
    given = os.environ.get("PTB_FIXTURES")
    for candidate in ([pathlib.Path(given)] if given else []) + [ROOT.parent / "shared" / "fixtures",
                                                                  ROOT / ".gpu" / "fixtures"]:
        if (candidate / "cuda" / "named_sm90" / "model.pte").exists():
            return candidate
    return None


def cli(*args):
    return subprocess.run([ptbundle._cli()] + [str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, check=False)


def make_keys(folder, name=""):
    key, pub = folder / (name + "key.pem"), folder / (name + "pub.pem")
    subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", str(key)],
                   check=True, stderr=subprocess.DEVNULL)
    subprocess.run(["openssl", "pkey", "-in", str(key), "-pubout", "-out", str(pub)], check=True)
    return key, pub


def flip_byte(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        c = f.read(1)
        f.seek(offset)
        f.write(bytes([c[0] ^ 0x5A]))


def gpu_here():
    done = cli("gpus", "--json")
    try:
        import json
        return bool(json.loads(done.stdout)["gpus"])
    except (ValueError, KeyError):
        return False


@unittest.skipIf(fixtures() is None, "no fixtures (../shared/fixtures or $PTB_FIXTURES)")
class SignedBundle(unittest.TestCase):
    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="ptb-python-test-"))
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.key, self.pub = make_keys(self.dir)
        source = fixtures() / "cuda" / "named_sm90"
        self.bundle = self.dir / "bundle"
        made = cli("export", "-o", self.bundle, "--part", "encoder=%s,%s" % (source / "model.pte", source / "encoder.ptd"))
        self.assertEqual(made.returncode, 0, made.stdout)
        signed = cli("sign", self.bundle, "--key", self.key)
        self.assertEqual(signed.returncode, 0, signed.stdout)

    def test_inspect_and_verify_are_the_commands_documents(self):
        inspected = ptbundle.inspect(self.bundle)
        self.assertEqual(inspected["command"], "inspect")
        self.assertEqual(inspected["exit_code"], 0)
        verified = ptbundle.verify(self.bundle, keys=[self.pub], require_signature=True, gpu="none")
        self.assertEqual(verified["command"], "verify")
        self.assertTrue(verified["ok"], verified)
        self.assertTrue(verified["paths"][0]["signature"]["verified"])

    def test_describe_needs_no_gpu(self):
        described = ptbundle.describe(self.bundle, keys=[self.pub])
        self.assertEqual(described["signature"]["state"], "verified")
        part = described["parts"][0]
        self.assertEqual(part["name"], "encoder")
        method = part["methods"][0]
        self.assertEqual(method["name"], "forward")
        for tensor in method["inputs"] + method["outputs"]:
            self.assertTrue(tensor["known"])
            self.assertIn(tensor["dtype"], ("float32", "bfloat16", "float16", "int64"))
        self.assertEqual(ptbundle.describe(self.bundle)["signature"]["state"], "unchecked")

    def test_weights_changed_after_signing_are_refused_with_verifys_message(self):
        flip_byte(self.bundle / "encoder.ptd", 4096)
        document = ptbundle.verify(self.bundle, keys=[self.pub], gpu="none")
        self.assertFalse(document["ok"])
        said = [c["message"] for c in document["checks"] if c["status"] == "fail"]
        with self.assertRaises(ptbundle.Error) as refused:
            ptbundle.load(self.bundle, part="encoder", keys=[self.pub])
        self.assertEqual(refused.exception.kind, "invalid")
        message = str(refused.exception)
        self.assertIn("encoder.ptd: SHA-256 is ", message)
        self.assertTrue(any(m in message for m in said), (message, said))

    def test_misuse(self):
        with self.assertRaises(ptbundle.Error) as bad_option:
            ptbundle.load(self.bundle, runtime="tensorrt")
        self.assertEqual(bad_option.exception.kind, "usage")
        self.assertIn("expected auto, builtin or libtorch", str(bad_option.exception))
        with self.assertRaises(ptbundle.Error) as no_part:
            ptbundle.load(self.bundle, part="missing", keys=[self.pub])
        self.assertIn("no part 'missing'", str(no_part.exception))
        with self.assertRaises(ptbundle.Error) as unsigned_required:
            ptbundle.load(self.bundle, require_signature=True)
        self.assertIn("--require-signature requires", str(unsigned_required.exception))
        with self.assertRaises(ptbundle.Error) as missing_key:
            ptbundle.load(self.bundle, keys=[self.dir / "missing.pem"])
        self.assertIn("missing.pem", str(missing_key.exception))
        if not gpu_here():
            with self.assertRaises(ptbundle.Error) as no_gpu:
                ptbundle.load(self.bundle, keys=[self.pub], require_signature=True)
            self.assertIn("GPU", str(no_gpu.exception))


def have_numpy():
    try:
        import numpy  # noqa: F401
        return True
    except ImportError:
        return False


class WithoutFixtures(unittest.TestCase):
    def test_library_and_errors(self):
        self.assertTrue(os.path.exists(ptbundle.library_path()))
        with self.assertRaises(ptbundle.Error) as missing:
            ptbundle.describe("/nonexistent/bundle")
        self.assertIn("/nonexistent/bundle", str(missing.exception))
        document = ptbundle.inspect("/nonexistent/bundle")
        self.assertNotEqual(document["exit_code"], 0)

    @unittest.skipUnless(have_numpy(), "no NumPy for this Python (Debian: python3-numpy)")
    def test_numpy_dtypes_map_to_dlpack(self):
        import numpy as np
        keep = []
        for name, (code, bits) in (("float32", (2, 32)), ("int64", (0, 64)), ("uint8", (1, 8)), ("float16", (2, 16))):
            tensor = ptbundle._dl_from_numpy(np.zeros((2, 3), dtype=name), keep)
            self.assertEqual((tensor.dtype.code, tensor.dtype.bits, tensor.ndim), (code, bits, 2))
        self.assertEqual(ptbundle._dl_from_numpy(np.zeros(2, dtype=np.bool_), keep).dtype.code, 6)
        with self.assertRaises(ptbundle.Error):
            ptbundle._dl_from_numpy(np.zeros((4, 4), dtype=np.float32)[:, ::2], keep)  # not contiguous
        with self.assertRaises(ptbundle.Error):
            ptbundle._dl_from_numpy(np.zeros(2, dtype=np.complex64), keep)
        with self.assertRaises(ptbundle.Error):
            ptbundle._dl_from_numpy([1.0, 2.0], keep)


if __name__ == "__main__":
    unittest.main()
