"""Run exported models in a Python that has torch and onnxruntime but not lwnas (tests/helpers/deploy.py).

Started as ``python -I -S run_artifacts.py DIR SITE...`` from a temporary folder: -S skips site-packages'
.pth files, so lwnas's editable install is never on the path; only the given SITE folders are added.
For each NAME.inputs.npz (or NAME@VARIANT.inputs.npz) in DIR it runs NAME.pt2 (torch.export.load)
and NAME.onnx (onnxruntime) and writes NAME.outputs.npz with arrays ``torch`` and ``onnx``.
"""

import json
import sys
from pathlib import Path

folder = Path(sys.argv[1])
sys.path.extend(sys.argv[2:])
try:
    import searchspace  # noqa: F401
except ModuleNotFoundError:
    pass
else:
    raise SystemExit("lwnas's searchspace is importable here: the standalone check would prove nothing")

import numpy as np  # noqa: E402 (after the check above: lwnas must not be importable)
import onnxruntime  # noqa: E402
import torch  # noqa: E402

for inputs_file in sorted(folder.glob("*.inputs.npz")):
    name = inputs_file.name.removesuffix(".inputs.npz")
    model = name.split("@")[0]  # NAME@VARIANT.inputs.npz: another input set for NAME's files
    arrays = np.load(inputs_file)
    # the artifact's own metadata names its inputs (lwnas.json), as a user without lwnas would read them
    extra = {"lwnas.json": ""}
    program = torch.export.load(folder / f"{model}.pt2", extra_files=extra)
    names = [i["name"] for i in json.loads(extra["lwnas.json"])["inputs"]]
    tensors = [torch.from_numpy(arrays[n]) for n in names]
    with torch.no_grad():
        from_torch = program.module()(*tensors).numpy()
    session = onnxruntime.InferenceSession(str(folder / f"{model}.onnx"), providers=["CPUExecutionProvider"])
    from_onnx = session.run(None, {i.name: arrays[i.name] for i in session.get_inputs()})[0]
    np.savez(folder / f"{name}.outputs.npz", torch=from_torch, onnx=from_onnx)
print("ran", len(list(folder.glob("*.outputs.npz"))), "models")
