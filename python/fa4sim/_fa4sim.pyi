# Type stubs of the extension fa4sim._fa4sim (src/python/module.cpp). Its functions take
# flattened, checked arrays; call the package's functions (fa4sim/__init__.pyi) instead.
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

def version() -> str: ...
def git_revision() -> str: ...
def set_packaged_data_dir(dir: str) -> None: ...
def ex2_emu_array_is_simd() -> bool: ...
def default_threads() -> int: ...
def output_buffer(bytes: int) -> npt.NDArray[np.uint8]: ...
output_buffer_min_bytes: int
def format_info(name: str) -> dict: ...
def format_names() -> list: ...
def fit(degree: int, objective: str, lo: float, hi: float, fix_c0: bool, minimax_only: bool,
        threads: int) -> dict: ...
def fit_objective_names() -> list: ...
def ex2_emu(x: npt.NDArray[np.float32], out: npt.NDArray[np.float32], degree: int,
            threads: int) -> None: ...
def exp2_analysis(options: Exp2Options) -> dict: ...
def encode(x: npt.NDArray[np.float32], out: npt.NDArray[Any], fmt: str, overflow: str,
           rounding: str, seed: Optional[int], threads: int) -> None: ...
def decode(codes: npt.NDArray[Any], out: npt.NDArray[np.float32], fmt: str, threads: int) -> None: ...
def quantize(x: npt.NDArray[np.float32], out: npt.NDArray[np.float32], fmt: str, overflow: str,
             rounding: str, seed: Optional[int], threads: int) -> None: ...
def attention(q: npt.NDArray[np.float32], q_shape: Sequence[int], k: npt.NDArray[np.float32],
              k_shape: Sequence[int], v: npt.NDArray[np.float32], v_shape: Sequence[int],
              options: AttentionOptions, threads: int
              ) -> Tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], dict]: ...
def attention_report(options: AttentionOptions, given: Sequence[str], threads: int) -> dict: ...
def check(dtypes: Sequence[str], preset: str, tau: Optional[float],
          max_offset: Optional[float]) -> dict: ...
def online_softmax(scores: npt.NDArray[np.float32], rows: int, keys: int,
                   v: Optional[npt.NDArray[np.float32]], d: int, tau: float, dtype: str,
                   max_offset: Optional[float], block: int, warp_rows: int, exp: str,
                   scale: Optional[float], order: str, allow_saturation: bool, threads: int
                   ) -> Tuple[npt.NDArray[np.float32], npt.NDArray[np.float32],
                              npt.NDArray[np.uint8], dict]: ...
def roofline(options: RooflineOptions) -> dict: ...
def rescale(options: RescaleOptions, given: Sequence[str]) -> dict: ...
def schedule(options: ScheduleOptions, inputs: Optional[list]) -> dict: ...
def formats() -> dict: ...
def quantize_report(x: npt.NDArray[np.float32], fmt: str, overflow: str, rounding: str,
                    seed: Optional[int]) -> dict: ...
def block_format_names() -> list: ...
def block_rule_names() -> list: ...
def block_format_info(options: BlockFormatOptions) -> dict: ...
def block_encode(x: npt.NDArray[np.float32], row_len: int, codes: npt.NDArray[np.uint8],
                 scales: npt.NDArray[np.uint8], options: BlockFormatOptions, threads: int) -> None: ...
def block_decode(codes: npt.NDArray[np.uint8], scales: npt.NDArray[np.uint8], row_len: int,
                 out: npt.NDArray[np.float32], options: BlockFormatOptions, threads: int) -> None: ...
def block_quantize(x: npt.NDArray[np.float32], row_len: int, options: BlockFormatOptions
                   ) -> Tuple[npt.NDArray[np.float32], dict]: ...
def block_tensor_scale(x: npt.NDArray[np.float32], options: BlockFormatOptions) -> float: ...

class Exp2Options:
    degree: str
    range: str
    samples: str
    sampling: str
    exhaustive: bool
    out_dtype: str
    seed: str
    reference: str
    coeffs: str
    coeffs_given: bool
    degree_given: bool
    threads: int
    def __init__(self) -> None: ...

class AttentionOptions:
    batch: str
    heads: str
    kv_heads: str
    seq: str
    seq_q: str
    seq_k: str
    d: str
    seed: str
    causal: bool
    softmax_scale: str
    q_scale: str
    dtype: str
    preset: str
    tau: str
    max_offset: str
    descale: str
    block_n: str
    block_m: str
    warp_rows: str
    exp: str
    order: str
    allow_saturation: bool
    no_split: bool
    def __init__(self) -> None: ...

class RooflineOptions:
    arch: str
    arch_files: list
    d: str
    sweep_d: str
    dtype: str
    tile: str
    direction: str
    emu_fraction: str
    degree: str
    schedule: str
    schedule_given: bool
    measured: str
    def __init__(self) -> None: ...

class RescaleOptions:
    tau: str
    dtype: str
    max_offset: str
    dist: str
    rows: str
    keys: str
    block: str
    d: str
    v_dist: str
    exp: str
    scale: str
    order: str
    warp_rows: str
    seed: str
    seeds: str
    rng: str
    allow_saturation: bool
    counts_only: bool
    threads: int
    def __init__(self) -> None: ...

class ScheduleOptions:
    arch: str
    arch_files: list
    spec: str
    kernel_factors: str
    batch: int
    heads: int
    kv_heads: int
    seq: int
    seq_k: int
    d: int
    causal: int
    tau: float
    emu_fraction: float
    rescale_share: float
    degree: int
    tile: str
    no_search: bool
    def __init__(self) -> None: ...

class BlockFormatOptions:
    format: str
    elem: str
    scale_format: str
    rule: str
    block: str
    tensor_scale: str
    def __init__(self) -> None: ...
