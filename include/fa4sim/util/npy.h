// npy.h: a small, strict reader (and writer) for NumPy .npy files.
//
// Format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
//   "\x93NUMPY" | major (1, 2 or 3) | minor (0) | header_len (u16 LE for v1, u32 LE for v2/v3)
//   | header: a Python dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...), }
//     padded with spaces and ended by '\n' | raw data, exactly prod(shape) * itemsize bytes.
//
// Accepted element types (little-endian only; '|' is accepted where the item is 1 byte wide):
//   '<f4' float32, '<f2' float16 (IEEE binary16), '<u2' uint16. A '<u2' array is how fa4sim
//   takes bfloat16 tensors (numpy has no bfloat16; save `x.view(np.uint16)`), so callers decide
//   whether u16 means bf16 bits. '|u1' uint8: the codes of the block-scaled formats.
// What is validated (each failure throws fa4sim::Error with exit code 2 naming the file):
//   magic, version, header length vs file size, header is ASCII (v1/v2) or UTF-8 (v3) text,
//   the dict has exactly the three keys once each, descr is one of the accepted types (big-endian
//   and other types are refused with what was found), fortran_order is True/False, shape is a
//   tuple of non-negative integers whose element count and byte size do not overflow, and the
//   data length equals the size the header promises (truncated files and trailing bytes are both
//   refused).
// Fortran order is supported: the data are transposed to C order on read (shape unchanged), so
// callers always see row-major data.
// Not supported: structured dtypes, object arrays (pickles), big-endian data, .npz archives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fa4sim {

enum class NpyType { f32, f16, u16, u8 };

const char* npy_type_name(NpyType t);  // "float32", "float16", "uint16", "uint8"

// "(2, 3)", "(5,)", "()" like numpy.
std::string shape_string(const std::vector<uint64_t>& shape);

struct NpyArray {
  NpyType type = NpyType::f32;
  std::string descr;           // as written in the header, e.g. "<f4"
  bool fortran_order = false;  // as written in the file; `raw` is always C order
  std::vector<uint64_t> shape;
  std::vector<uint8_t> raw;  // C-order little-endian element bytes
  int version_major = 1;

  uint64_t size() const;             // number of elements
  size_t item_size() const;          // bytes per element
  std::string shape_string() const;  // "(2, 3)" like numpy

  // Element i converted to float32. u16 is read as bf16 bits when `u16_is_bf16`, otherwise as
  // an integer value. Exact for every type (fp16 and bf16 embed exactly in float32).
  float value(uint64_t i, bool u16_is_bf16 = true) const;
  // All elements converted to float32 in C order.
  std::vector<float> to_float32(bool u16_is_bf16 = true) const;
};

// Parses an in-memory .npy image. `name` is used in error messages. Throws fa4sim::Error.
// uint8 ('|u1') is read only with `allow_u8` (the block-scaled codes); elsewhere it is refused.
NpyArray parse_npy(const uint8_t* data, size_t size, const std::string& name,
                   bool allow_u8 = false);

// Reads a file. Throws fa4sim::Error when it cannot be opened or is not a valid .npy.
NpyArray read_npy(const std::string& path, bool allow_u8 = false);

// Reads a file and requires a 2-D float32 array (e.g. a matrix of attention scores).
NpyArray read_npy_2d_f32(const std::string& path);

// Writes a version-1.0 .npy (header padded to a multiple of 64 bytes, as numpy does).
// `raw` holds the elements in the order given by `fortran_order`. Throws fa4sim::Error.
std::vector<uint8_t> encode_npy(NpyType type, const std::vector<uint64_t>& shape, const void* raw,
                                size_t raw_bytes, bool fortran_order = false);
void write_npy(const std::string& path, NpyType type, const std::vector<uint64_t>& shape,
               const void* raw, size_t raw_bytes, bool fortran_order = false);
void write_npy_f32(const std::string& path, const std::vector<uint64_t>& shape,
                   const std::vector<float>& data);

}  // namespace fa4sim
