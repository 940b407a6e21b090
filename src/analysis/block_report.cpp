// block_report.cpp: `fa4sim block`'s encode / decode and its error summary (block_report.h).
#include "fa4sim/analysis/block_report.h"

#include <cmath>

#include <fmt/format.h>

namespace fa4sim {

BlockQuantized block_quantize(const BlockFormat& f, std::span<const float> in, size_t row_len) {
  BlockQuantized q;
  q.codes.resize(in.size());
  q.scales.resize(in.size() / size_t(f.block_size));
  q.decoded.resize(in.size());
  const Stopwatch sw;
  block_encode_array(f, in, row_len, q.codes, q.scales);
  q.encode_s = sw.seconds();
  block_decode_array(f, q.codes, row_len, q.scales, q.decoded);
  return q;
}

namespace {

struct BlockStats {
  uint64_t blocks = 0, nan_blocks = 0, saturated = 0, flushed = 0;
  double max_abs_err = 0, err2 = 0, ref2 = 0;
};

BlockStats block_stats(const BlockFormat& f, std::span<const float> in, const BlockQuantized& q) {
  BlockStats st;
  const size_t bs = size_t(f.block_size);
  st.blocks = q.scales.size();
  for (size_t b = 0; b < st.blocks; ++b) {
    const float s = block_scale_value(f, q.scales[b]);
    if (std::isnan(s)) {
      ++st.nan_blocks;
      continue;
    }
    for (size_t i = b * bs; i < (b + 1) * bs; ++i) {
      const double x = in[i], y = q.decoded[i];
      st.saturated += std::fabs(x) / s > f.elem->max_finite ? 1 : 0;
      st.flushed += (x != 0 && y == 0) ? 1 : 0;
      if (!std::isfinite(x)) continue;
      st.max_abs_err = std::max(st.max_abs_err, std::fabs(y - x));
      st.err2 += (y - x) * (y - x);
      st.ref2 += x * x;
    }
  }
  return st;
}

}  // namespace

Report block_report(const BlockFormat& f, std::span<const float> in, size_t row_len,
                    const BlockQuantized& q) {
  const BlockStats st = block_stats(f, in, q);
  const double rel_rms = st.ref2 > 0 ? std::sqrt(st.err2 / st.ref2) : 0.0;
  Report r;
  r.command = "block";
  r.results["summary"] = {{"elements", in.size()},         {"row_length", row_len},
                          {"blocks", st.blocks},           {"nan_scale_blocks", st.nan_blocks},
                          {"saturated", st.saturated},     {"flushed_to_zero", st.flushed},
                          {"max_abs_err", st.max_abs_err}, {"rel_rms_err", rel_rms}};
  // Throughput of the encoding (one thread), in GB/s of float32 input.
  r.timings["encode_s"] = q.encode_s;
  r.timings["encode_gb_per_s"] = q.encode_s > 0 ? double(in.size()) * 4 / q.encode_s / 1e9 : 0.0;
  Table t;
  t.title = fmt::format("Block-scaled {} elements, {} scales, block {}, rule {}", f.elem->name,
                        f.scale->name, f.block_size, scale_rule_name(f.rule));
  t.columns = {"elements",     "blocks",    "NaN-scale blocks", "saturated",
               "flushed to 0", "max |err|", "rel RMS err"};
  t.rows.push_back({std::to_string(in.size()), std::to_string(st.blocks),
                    std::to_string(st.nan_blocks), std::to_string(st.saturated),
                    std::to_string(st.flushed), fmt::format("{:.6g}", st.max_abs_err),
                    fmt::format("{:.6g}", rel_rms)});
  t.notes = {
      "Errors over the blocks with a finite scale; a NaN or inf in a block makes its scale "
      "NaN (every element decodes to NaN)."};
  r.tables.push_back(std::move(t));
  return r;
}

}  // namespace fa4sim
