# Type stubs of the package fa4sim: the public API (fa4sim/__init__.py documents every argument:
# help(fa4sim.attention)).
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

ArrayLike = Any  # numpy arrays, torch CPU tensors, DLPack producers, lists, scalars
Number = Union[int, float]
Format = Any  # a name ("e4m3", "float8_e4m3fn", "bfloat16", ...) or a dtype (NumPy, ml_dtypes, torch)

def ex2_emu(x: ArrayLike, degree: int = 3, *, out: Optional[npt.NDArray[np.float32]] = None,
            threads: int = 0) -> npt.NDArray[np.float32]: ...
def exp2_analysis(degree: Union[None, int, Sequence[int]] = None,
                  range: Tuple[Number, Number] = (-20.0, 8.0), samples: int = 4194304,
                  sampling: str = "uniform", exhaustive: bool = False, out_dtype: Format = "bf16",
                  seed: int = 1, reference: str = "f64", threads: int = 0, *,
                  coeffs: Union[None, str, Sequence[float]] = None) -> dict: ...
def fit(degree: int = 3, objective: str = "fp32-maxrel",
        range: Tuple[Number, Number] = (-20.0, 8.0), fix_c0: bool = False,
        minimax_only: bool = False, threads: int = 0) -> dict: ...
def format_info(fmt: Any) -> dict: ...
def encode(x: ArrayLike, fmt: Format = "e4m3", overflow: str = "satfinite",
           rounding: str = "nearest", seed: Optional[int] = None, *, typed: bool = False,
           out: Optional[ArrayLike] = None, threads: int = 0) -> Any: ...
def decode(codes: ArrayLike, fmt: Optional[Format] = None, *, out: Optional[ArrayLike] = None,
           threads: int = 0) -> Any: ...
def quantize(x: ArrayLike, fmt: Format = "e4m3", overflow: str = "satfinite",
             rounding: str = "nearest", seed: Optional[int] = None, *,
             out: Optional[npt.NDArray[np.float32]] = None,
             threads: int = 0) -> npt.NDArray[np.float32]: ...
def attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, dtype: Format = "bf16",
              tau: Optional[Number] = None, max_offset: Optional[Number] = None,
              causal: bool = False, softmax_scale: Optional[Number] = None, *,
              preset: str = "upstream", descale: str = "amax", q_scale: Number = 1.0,
              block_n: int = 128, block_m: int = 128, warp_rows: int = 32, exp: str = "mufu",
              order: str = "reverse", allow_saturation: bool = False, split: bool = True,
              threads: int = 0
              ) -> Tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], dict]: ...
def check(dtype: Union[None, Format, Sequence[Format]] = None, tau: Optional[Number] = None,
          max_offset: Optional[Number] = None, preset: str = "upstream") -> dict: ...
def online_softmax(scores: ArrayLike, v: Optional[ArrayLike] = None, tau: Number = 0.0,
                   dtype: Format = "bf16", max_offset: Optional[Number] = None, *, block: int = 128,
                   warp_rows: int = 32, exp: str = "mufu", scale: Optional[Number] = None,
                   order: str = "reverse", allow_saturation: bool = False, threads: int = 0
                   ) -> Tuple[Optional[npt.NDArray[np.float32]], Optional[npt.NDArray[np.float32]],
                              npt.NDArray[np.uint8], dict]: ...
def roofline(arch: Union[str, Sequence[str]] = "all", d: Union[int, Sequence[int]] = 128,
             dtype: str = "bf16", tile: str = "128x128", direction: str = "fwd",
             emu_fraction: Optional[float] = None, degree: Union[int, Sequence[int]] = 3,
             schedule: Union[None, str, Tuple[int, ...]] = None, measured: Optional[str] = None,
             arch_file: Sequence[str] = (), sweep_d: Optional[str] = None) -> dict: ...

def quantize_report(x: ArrayLike, fmt: Format = "e4m3", overflow: str = "satfinite",
                    rounding: str = "nearest", seed: Optional[int] = None) -> dict: ...
def formats() -> dict: ...
def block_encode(x: ArrayLike, fmt: str = "mxfp8", *, elem: Optional[Format] = None,
                 scale_format: Optional[Format] = None, block: Optional[int] = None,
                 rule: Optional[str] = None, tensor_scale: Optional[Number] = None,
                 threads: int = 0) -> Tuple[Any, Any]: ...
def block_decode(codes: ArrayLike, scales: ArrayLike, fmt: str = "mxfp8", *,
                 elem: Optional[Format] = None, scale_format: Optional[Format] = None,
                 block: Optional[int] = None, rule: Optional[str] = None,
                 tensor_scale: Optional[Number] = None, threads: int = 0) -> Any: ...
def block_quantize(x: ArrayLike, fmt: str = "mxfp8", *, elem: Optional[Format] = None,
                   scale_format: Optional[Format] = None, block: Optional[int] = None,
                   rule: Optional[str] = None, tensor_scale: Union[None, str, Number] = None
                   ) -> Tuple[Any, dict]: ...
def block_tensor_scale(x: ArrayLike, fmt: str = "nvfp4", *, elem: Optional[Format] = None,
                       scale_format: Optional[Format] = None) -> float: ...
def attention_report(batch: int = 1, heads: int = 8, kv_heads: Optional[int] = None,
                     seq: Union[int, Sequence[int]] = 1024, seq_k: Optional[int] = None,
                     d: int = 128, dtype: Union[Format, Sequence[Format]] = "bf16",
                     tau: Union[None, Number, Sequence[Number]] = None,
                     max_offset: Optional[Number] = None, causal: bool = False,
                     softmax_scale: Optional[Number] = None, *, seed: Optional[int] = None,
                     preset: str = "upstream", descale: str = "amax", q_scale: Number = 1.0,
                     block_n: int = 128, block_m: int = 128, warp_rows: int = 32,
                     exp: str = "mufu", order: str = "reverse", allow_saturation: bool = False,
                     split: bool = True, threads: int = 0) -> dict: ...
def rescale(tau: Union[Number, Sequence[Number]] = (0, 8),
            dtype: Union[Format, Sequence[Format]] = "bf16", max_offset: Optional[Number] = None,
            dist: Union[str, Sequence[str]] = "normal:1.5", rows: Optional[int] = None,
            keys: Optional[int] = None, *, block: int = 128, d: int = 128, v_dist: str = "normal",
            exp: str = "mufu", scale: Optional[Number] = None, order: str = "auto",
            warp_rows: int = 32, seed: Optional[int] = None, seeds: int = 1, rng: str = "fa4sim",
            allow_saturation: bool = False, counts_only: bool = False, threads: int = 0) -> dict: ...
def schedule(arch: Union[str, Sequence[str]] = "h200", *, batch: int = 4, heads: int = 32,
             kv_heads: Optional[int] = None, seq: int = 4096, seq_k: Optional[int] = None,
             d: int = 128, causal: bool = False, tau: Number = 0.0, emu_fraction: Number = 0.0,
             degree: int = 3, rescale_share: Number = 0.02, tile: Optional[str] = None,
             search: bool = True, spec: Optional[str] = None, arch_file: Sequence[str] = (),
             inputs: Optional[Sequence[dict]] = None,
             kernel_factors: Optional[str] = None) -> dict: ...

__version__: str
__git_revision__: str
