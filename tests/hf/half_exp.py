"""half_exp: run ../shared/tools/hf-oracle/convert_here.py with torch.exp of a float16 tensor computed as
PyTorch 2's CPU kernel computes it, for Qwen3NextModel.modify_tensors' -torch.exp(A_log) on an F16 checkpoint.

Debian's torch 1.13 has no CPU exp for Half ("exp_vml_cpu" not implemented for 'Half'), so the converter
stops at the first F16 A_log. PyTorch 2's CPU kernel (Vectorized<Half>::exp) widens each value to float32,
takes Sleef's expf (u10, what 1.13's float32 exp uses) and rounds the result to float16; this wrapper does the
same with 1.13's float32 exp, lazily (the converter's tensors are lazy: the cast, exp and cast back are
recorded and run when the tensor is written). Any other dtype goes to torch.exp untouched.
usage: LLAMA_SRC=... [FORCE_PRE=name] python3 half_exp.py CONVERT_HERE.py HF_DIR [convert options]"""
import runpy, sys
import torch

_exp = torch.exp


def exp(x, *args, **kwargs):
    if getattr(x, "dtype", None) is torch.float16 and not args and not kwargs:
        return _exp(x.to(torch.float32)).to(torch.float16)
    return _exp(x, *args, **kwargs)


torch.exp = exp
script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
