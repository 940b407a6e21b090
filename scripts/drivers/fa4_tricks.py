"""fa4_tricks.py: FlashAttention-4's softmax tricks inside upstream's own sm90 forward kernel.

Upstream's sm90 forward (flash_attn/cute/flash_fwd_sm90.py, FlashAttentionForwardSm90, 4.0.0b36)
uses the plain always-rescale `Softmax` of flash_attn/cute/softmax.py. This module builds a
subclass of it with the sm100 kernel's tricks and swaps it in, without editing the installed
files:
  (a) conditional rescaling with threshold tau, decided per row as SoftmaxSm100.update_row_max
      does (keep the stale row max while (row_max_old - row_max_new) * scale_log2 >= -tau), and
      the O rescale skipped unless some row of the WARP needs it: a warp holds 16 rows of the
      wgmma m64 accumulator (each thread 2 rows, 4 threads per row), the vote is
      vote_any_sync(row_scale != 1) over the warp's 32 lanes, so the group is 16 rows
      (`fa4sim attention --warp-rows 16`);
  (b) the exp2 emulation (utils.ex2_emulation, degree 3 by default) on k/8 of each row's
      columns: in the accumulator's row view a thread's element i is column
      8 * (i // 2) + 2 * (lane % 4) + i % 2 of the key block, i.e. element pair i // 2 is n8 tile
      t; tile t is emulated iff ((t % 8) * k) % 8 < k. The choice is per register (compile
      time), so every lane of a warp takes the same path. Upstream's sm100 (freq, res,
      start_frg) rule counts columns of a 32-column fragment held by ONE thread; here a thread
      holds 2 columns of each n8 tile, so the nearest warp-uniform rule is per tile;
  (c) max_offset as in sm100: P = exp2(S * scale_log2 + (max_offset - row_max * scale_log2)), the
      LSE corrected by max_offset * ln 2 in finalize;
  (d) optionally (count_rescales) the rescale decisions of every row and warp, written into the LSE
      output in place of the LSE (Note [Rescale counts through the LSE]).
Selecting a variant swaps flash_fwd_sm90's module-level `Softmax` and gives the interface's
compile cache a separate dictionary per variant, so a variant never reuses the stock kernel's
compiled entry (or another variant's).
"""
import math
from dataclasses import dataclass

_VARIANTS = {}


def emulated_tile(t, k):
    """Tile t (8 columns) of a key block goes through the emulation when k/8 are emulated."""
    return k > 0 and ((t % 8) * k) % 8 < k


def variant_name(tau, max_offset, emu_eighths, degree, count=False):
    return f"tau{tau:g}_off{max_offset:g}_emu{emu_eighths}of8_deg{degree}" + ("_count" if count else "")


# Note [Rescale counts through the LSE]: with count=True the variant also counts, per row, the
# blocks after the first whose row_scale < 1 (the row asked for a rescale) and the blocks whose warp
# vote was true (the warp rescaled O), and finalize writes row_count + COUNT_WARP_UNIT * warp_count
# into the LSE output instead of the LSE (O is unchanged). Counts are integers < 2^12, exact in
# float32. fa4sim's host side decodes them (gpu_upstream.cpp) and compares the shares with the
# CPU model's.
COUNT_WARP_UNIT = 4096.0


def make_softmax_class(tau, max_offset, emu_eighths, degree=3, count=False):
    import cutlass
    import cutlass.cute as cute
    from cutlass import Float32
    from quack import layout_utils
    import flash_attn.cute.utils as utils
    from flash_attn.cute.softmax import Softmax

    tau = float(tau)
    max_offset = float(max_offset)
    k = int(emu_eighths)
    LN2 = math.log(2.0)

    @dataclass
    class SoftmaxTricks(Softmax):
        n_row: cute.Tensor = None   # rescales asked per row (Note [Rescale counts through the LSE])
        n_warp: cute.Tensor = None  # count=True: rescales done by the row's warp

        @staticmethod
        def create(scale_log2, num_rows, arch=80, softmax_scale=None):
            row_max = cute.make_rmem_tensor(num_rows, Float32)
            row_sum = cute.make_rmem_tensor(num_rows, Float32)
            n_row = cute.make_rmem_tensor(num_rows, Float32)
            n_warp = cute.make_rmem_tensor(num_rows, Float32)
            return SoftmaxTricks(scale_log2, num_rows, row_max, row_sum, arch, softmax_scale, n_row, n_warp)

        @cute.jit
        def online_softmax(self, acc_S: cute.Tensor, is_first: cutlass.Constexpr[bool] = False,
                           check_inf: cutlass.Constexpr[bool] = True) -> cute.Tensor:
            acc_S_mn = layout_utils.reshape_acc_to_mn(acc_S)
            row_scale = cute.make_fragment_like(self.row_max, Float32)
            row_max = self.row_max
            row_sum = self.row_sum
            scale_log2 = self.scale_log2
            arch = self.arch
            for r in cutlass.range(cute.size(row_max), unroll_full=True):
                acc_S_row = acc_S_mn[r, None].load()
                row_max_cur = utils.fmax_reduce(
                    acc_S_row, init_val=row_max[r] if cutlass.const_expr(not is_first) else None, arch=arch)
                row_max_cur = cute.arch.warp_reduction_max(row_max_cur, threads_in_group=4)
                row_max_prev = row_max[r]
                row_max_safe = row_max_cur
                if cutlass.const_expr(check_inf):
                    row_max_safe = 0.0 if row_max_cur == -Float32.inf else row_max_cur
                row_max_used = row_max_safe
                row_max[r] = row_max_cur
                if cutlass.const_expr(is_first):
                    row_scale[r] = 1.0
                else:
                    acc_scale_ = (row_max_prev - row_max_safe) * scale_log2
                    row_scale[r] = cute.math.exp2(acc_scale_, fastmath=True)
                    if cutlass.const_expr(tau > 0.0):
                        if acc_scale_ >= -tau:  # keep the stale max (Note [Lazy rescale])
                            row_max_used = row_max_prev
                            row_max[r] = row_max_prev
                            row_scale[r] = 1.0
                row_max_scaled = row_max_used * scale_log2 - max_offset
                acc_S_mn[r, None].store(acc_S_row * scale_log2 - row_max_scaled)
                row = acc_S_mn[r, None]
                for i in cutlass.range_constexpr(cute.size(row)):
                    if cutlass.const_expr(emulated_tile(i // 2, k)):
                        row[i] = utils.ex2_emulation(row[i], poly_degree=degree)
                    else:
                        row[i] = cute.math.exp2(row[i], fastmath=True)
                acc_S_row_exp = row.load()
                if cutlass.const_expr(is_first):
                    row_sum[r] = utils.fadd_reduce(acc_S_row_exp, init_val=None, arch=arch)
                else:
                    row_sum[r] = utils.fadd_reduce(acc_S_row_exp, init_val=row_sum[r] * row_scale[r], arch=arch)
            if cutlass.const_expr(count):
                if cutlass.const_expr(is_first):
                    for r in cutlass.range_constexpr(cute.size(row_max)):
                        self.n_row[r] = 0.0
                        self.n_warp[r] = 0.0
                else:
                    need = row_scale[0] < 1.0
                    for r in cutlass.range_constexpr(1, cute.size(row_max)):
                        need = need | (row_scale[r] < 1.0)
                    warp = cute.arch.vote_any_sync(need)
                    for r in cutlass.range_constexpr(cute.size(row_max)):
                        self.n_row[r] = self.n_row[r] + (1.0 if row_scale[r] < 1.0 else 0.0)
                        self.n_warp[r] = self.n_warp[r] + (1.0 if warp else 0.0)
            return row_scale

        @cute.jit
        def finalize(self, final_scale: Float32 = 1.0, sink_val=None) -> cute.Tensor:
            row_scale = Softmax.finalize(self, final_scale=final_scale, sink_val=sink_val)
            if cutlass.const_expr(count):
                for r in cutlass.range_constexpr(cute.size(self.row_sum)):
                    self.row_sum[r] = self.n_row[r] + COUNT_WARP_UNIT * self.n_warp[r]
            elif cutlass.const_expr(max_offset != 0.0):
                for r in cutlass.range(cute.size(self.row_sum), unroll_full=True):
                    self.row_sum[r] = self.row_sum[r] - max_offset * LN2  # -inf stays -inf
            return row_scale

        @cute.jit
        def rescale_O(self, acc_O: cute.Tensor, row_scale: cute.Tensor) -> None:
            acc_O_mn = layout_utils.reshape_acc_to_mn(acc_O)
            if cutlass.const_expr(tau > 0.0):
                # The warp's 16 rows share the decision (the correction warp's vote on sm100).
                need = row_scale[0] != 1.0
                for r in cutlass.range_constexpr(1, cute.size(row_scale)):
                    need = need | (row_scale[r] != 1.0)
                if cute.arch.vote_any_sync(need):
                    for r in cutlass.range(cute.size(row_scale), unroll_full=True):
                        acc_O_mn[r, None].store(acc_O_mn[r, None].load() * row_scale[r])
            else:
                for r in cutlass.range(cute.size(row_scale), unroll_full=True):
                    acc_O_mn[r, None].store(acc_O_mn[r, None].load() * row_scale[r])

    SoftmaxTricks.__name__ = "SoftmaxTricks_" + variant_name(tau, max_offset, k, degree, count)
    return SoftmaxTricks


def select(variant):
    """Makes the next flash_attn_func calls use `variant` (None = stock upstream): dict with tau,
    max_offset, emu_eighths, degree. Compiled kernels are cached per variant."""
    import flash_attn.cute.flash_fwd_sm90 as f90
    from flash_attn.cute import interface
    from flash_attn.cute.cache_utils import JITCache
    from flash_attn.cute.softmax import Softmax

    args = None if variant is None else (variant.get("tau", 0.0), variant.get("max_offset", 0.0),
                                         variant.get("emu_eighths", 0), variant.get("degree", 3),
                                         bool(variant.get("count_rescales", False)))
    key = None if args is None else variant_name(*args)
    if key not in _VARIANTS:
        cls = Softmax if key is None else make_softmax_class(*args)
        cache = interface._flash_attn_fwd.compile_cache if key is None and not _VARIANTS else JITCache()
        _VARIANTS[key] = (cls, cache)
    cls, cache = _VARIANTS[key]
    f90.Softmax = cls
    interface._flash_attn_fwd.compile_cache = cache
    return key
