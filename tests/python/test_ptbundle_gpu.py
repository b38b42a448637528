"""The Python module on a GPU (the GPU tier: scripts/gpu-check, or by hand
on a machine with a CUDA GPU, PyTorch and a build of ptbundle): the example's
encoder exported into a signed bundle, called with NumPy arrays and with
PyTorch CUDA tensors through DLPack (outputs written in place, no copy),
outputs compared with eager PyTorch's (examples/encoder.out0.npy). Skips,
naming what is missing, anywhere else."""

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
import ptbundle  # noqa: E402

EXAMPLES = ROOT / "examples"


def missing():
    try:
        import numpy  # noqa: F401
        import torch
    except ImportError as e:
        return "no %s" % e.name
    if not torch.cuda.is_available():
        return "no CUDA GPU visible to PyTorch"
    return ""


def cli(*args):
    return subprocess.run([ptbundle._cli()] + [str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, check=False)


@unittest.skipIf(missing(), missing())
class OnTheGpu(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import numpy as np
        cls.dir = pathlib.Path(tempfile.mkdtemp(prefix="ptb-python-gpu-"))
        cls.bundle = cls.dir / "bundle"
        made = cli("export", "-o", cls.bundle, "--part", "encoder=%s" % (EXAMPLES / "encoder.pt2"),
                   "--example", "encoder=%s:%s" % (EXAMPLES / "encoder.in0.npy", EXAMPLES / "encoder.out0.npy"))
        assert made.returncode == 0, made.stdout
        key, pub = cls.dir / "key.pem", cls.dir / "pub.pem"
        subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out",
                        str(key)], check=True, stderr=subprocess.DEVNULL)
        subprocess.run(["openssl", "pkey", "-in", str(key), "-pubout", "-out", str(pub)], check=True)
        assert cli("sign", cls.bundle, "--key", key).returncode == 0
        cls.pub = pub
        cls.x = np.load(EXAMPLES / "encoder.in0.npy")
        cls.eager = np.load(EXAMPLES / "encoder.out0.npy")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, True)

    def test_numpy_on_the_host_equals_eager(self):
        import numpy as np
        m = ptbundle.load(self.bundle, keys=[self.pub], require_signature=True)
        self.assertEqual(m.info["signature"]["state"], "verified")
        self.assertGreater(m.info["verification"]["passed"], 0)
        self.assertEqual(m.info["verification"]["failed"], 0)
        y = m(self.x, out=[np.empty_like(self.eager)])
        diff = float(np.max(np.abs(y - self.eager)))
        print("[gpu] python numpy: max abs diff against eager %.3g; checks %.1f ms, test case %.1f ms, load %.1f ms"
              % (diff, m.info["load_ms"]["check"], m.info["load_ms"]["testcase"], m.info["load_ms"]["total"]))
        self.assertLess(diff, 1e-4)

    def test_torch_on_the_gpu_zero_copy_equals_eager(self):
        import torch
        m = ptbundle.load(self.bundle, keys=[self.pub])
        x = torch.from_numpy(self.x).cuda()
        y = torch.full(self.eager.shape, float("nan"), device="cuda")
        before = y.data_ptr()
        out = m(x, out=[y])
        torch.cuda.synchronize()
        self.assertIs(out, y)
        self.assertEqual(y.data_ptr(), before)  # written in place
        diff = float((y.cpu() - torch.from_numpy(self.eager)).abs().max())
        print("[gpu] python torch/DLPack: max abs diff against eager %.3g" % diff)
        self.assertLess(diff, 1e-4)
        # Outputs made like the input when none are given.
        z = m(x)
        torch.cuda.synchronize()
        self.assertEqual(z.device, x.device)
        self.assertTrue(torch.equal(z, y))

    def test_a_binding_reruns_on_inputs_refilled_in_place(self):
        import torch
        m = ptbundle.load(self.bundle, keys=[self.pub])
        x = torch.zeros(self.x.shape, device="cuda")
        y = torch.empty(self.eager.shape, device="cuda")
        call = m.bind(x, out=[y])
        x.copy_(torch.from_numpy(self.x))
        self.assertIs(call(), y)
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(y, m(x)))
        m.close()
        with self.assertRaises(ptbundle.Error):
            call()

    def test_misuse_on_the_gpu(self):
        import torch
        m = ptbundle.load(self.bundle)
        x = torch.from_numpy(self.x).cuda()
        with self.assertRaises(ptbundle.Error) as wrong_dtype:
            m(x.half(), out=[torch.empty(self.eager.shape, device="cuda")])
        self.assertEqual(wrong_dtype.exception.kind, "usage")
        with self.assertRaises(ptbundle.Error) as mixed:
            m(x, out=[torch.empty(self.eager.shape)])  # output on the host
        self.assertIn("host memory", str(mixed.exception))
        m.close()
        with self.assertRaises(ptbundle.Error):
            m(x)


if __name__ == "__main__":
    unittest.main()
